"""Autograder for numerical Python notebooks."""
__version__ = "0.1.0"
