"""tokens_to_multihead cases (14: tokenizer 3, token_ids 1, embeddings 2, multihead 3, attention_table 2, reading 1, per_head 2)."""

A = "tokens_to_multihead"

HEAD = """import re

import torch
import torch.nn as nn
import pandas as pd

DATA_DIR = 'data/'
VOCAB_SIZE = 30522  # size of the bert-base-uncased vocabulary"""
CLASS = """def load_vocab(path):
    # Read `token<TAB>id` lines into a dict token -> id.
    vocab = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            token, idx = line.rstrip('\\n').split('\\t')
            vocab[token] = int(idx)
    return vocab


class SubsetBertTokenizer:
    # Offline stand-in for AutoTokenizer.from_pretrained("bert-base-uncased"), for words in the vocabulary subset.

    def __init__(self, vocab_path, vocab_size=VOCAB_SIZE):
        self.vocab = load_vocab(vocab_path)
        self.vocab_size = vocab_size
        self.unk_token = '[UNK]'

    def tokenize(self, text):
{TOK}

    def convert_tokens_to_ids(self, tokens):
{IDS}"""
TOK = """        return re.findall(r"\\w+|[^\\w\\s]", text.lower())"""
IDS = """        return [self.vocab.get(t, self.vocab[self.unk_token]) for t in tokens]"""
C4 = """tokenizer = SubsetBertTokenizer(DATA_DIR + "vocab_subset.txt")

sentence = "The bank approved the loan"
tokens = tokenizer.tokenize(sentence)

print("Subword Tokens:")
print(tokens)"""
C5 = """token_ids = tokenizer.convert_tokens_to_ids(tokens)
token_ids = torch.tensor([token_ids])  # batch size = 1

print("Token IDs:")
print(token_ids)"""
EMB = """vocab_size = tokenizer.vocab_size
embedding_dim = 8

torch.manual_seed(0)
embedding_layer = nn.Embedding(vocab_size, embedding_dim)

embeddings = embedding_layer(token_ids)

print("Embeddings shape:", embeddings.shape)"""
MHA = """torch.manual_seed(0)
multihead_attn = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)"""
CALL = "output, attention_weights = multihead_attn(embeddings, embeddings, embeddings)"
DF = "attention_df = pd.DataFrame(attention_weights[0].detach().numpy(), index=tokens, columns=tokens)\nattention_df"
READ = "bank_most_attended = attention_df.loc['bank'].idxmax()\nprint(bank_most_attended)"
PERHEAD = """_, head_weights = multihead_attn(embeddings, embeddings, embeddings, average_attn_weights=False)
print("Per-head weights shape:", head_weights.shape)"""
LAST = 'print("Final output shape:", output.shape)'

FULL = {
    "tokenizer": (3, "right"),
    "token_ids": (1, "right"),
    "embeddings": (2, "right"),
    "multihead": (3, "right"),
    "attention_table": (2, "right"),
    "reading": (1, "right"),
    "per_head": (2, "right"),
}


def T(**over):
    t = dict(FULL)
    t.update(over)
    return t


def std(**r):
    p = dict(TOK=TOK, IDS=IDS, EMB=EMB, MHA=MHA, CALL=CALL, DF=DF, READ=READ, PERHEAD=PERHEAD)
    p.update(r)
    return [
        HEAD,
        CLASS.replace("{TOK}", p["TOK"]).replace("{IDS}", p["IDS"]),
        C4,
        C5,
        p["EMB"],
        p["MHA"],
        p["CALL"],
        p["DF"],
        p["READ"],
        p["PERHEAD"],
        LAST,
    ]


CASES = []

CASES.append(
    dict(
        assignment=A,
        name="t01_one_cell_char_loop_tokenizer",
        run=True,
        cells=[
            "\n\n".join(
                [
                    HEAD,
                    CLASS.replace(
                        "{TOK}",
                        """        out, cur = [], ''
        for ch in text.lower():
            if ch.isalnum():
                cur += ch
            else:
                if cur:
                    out.append(cur)
                    cur = ''
                if not ch.isspace():
                    out.append(ch)
        if cur:
            out.append(cur)
        return out""",
                    ).replace(
                        "{IDS}",
                        """        ids = []
        for t in tokens:
            if t in self.vocab:
                ids.append(self.vocab[t])
            else:
                ids.append(self.vocab['[UNK]'])
        return ids""",
                    ),
                    C4,
                    C5,
                    EMB,
                    MHA,
                    CALL,
                    DF,
                    READ,
                    PERHEAD,
                    LAST,
                ]
            )
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t02_no_lowercase",
        run=True,
        cells=std(TOK="""        return re.findall(r"\\w+|[^\\w\\s]", text)"""),
        truth=T(
            tokenizer=(1, "no lower-casing: tokens and tokenize() wrong (0/2); ids right (1)"),
            token_ids=(1, "right given own tokens ('The' -> [UNK]) (carried)"),
            embeddings=(2, "layer right; embeddings right given own token_ids (carried)"),
            multihead=(
                3,
                "right given own embeddings (own data: carried from the [UNK] id; the variants replace embeddings)",
            ),
            attention_table=(2, "right given own tokens and weights (labels carry 'The'; carried)"),
            reading=(1, "right on the notebook's data; given own labels on other embeddings (carried)"),
            per_head=(2, "right given own embeddings (carried on own data)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t03_no_batch_first",
        run=True,
        cells=std(
            MHA="""torch.manual_seed(0)
multihead_attn = nn.MultiheadAttention(embed_dim=8, num_heads=2)"""
        ),
        truth=T(
            multihead=(0, "module without batch_first=True: reads (sequence, batch, features); all three checks wrong"),
            attention_table=(0, "the DataFrame cell raises (weights are 1x1): no table"),
            reading=(0, "no value (its cell fails because the table does not exist)"),
            per_head=(2, "the per-head call itself is right given own module (carried); debatable, a TA might dock it"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t04_table_transposed",
        run=True,
        cells=std(
            DF="attention_df = pd.DataFrame(attention_weights[0].detach().numpy().T, index=tokens, columns=tokens)"
        ),
        truth=T(
            attention_table=(1, "values transposed (0); labels right (1)"),
            reading=(1, "right given own table (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t05_per_head_averaged",
        run=True,
        cells=std(PERHEAD="_, head_weights = multihead_attn(embeddings, embeddings, embeddings)"),
        truth=T(per_head=(0, "average_attn_weights=False missing: averaged weights, shape (1, 5, 5)")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t06_restructured_unrun_plot",
        run=False,
        cells=[
            "md:# Tokens to multi-head\nMy helpers first.",
            HEAD + "\nimport numpy as np\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt",
            CLASS.replace(
                "{TOK}",
                """        text = text.lower()
        for p in ',.!?;:':
            text = text.replace(p, ' ' + p + ' ')
        return text.split()""",
            ).replace(
                "{IDS}",
                """        unk = self.vocab['[UNK]']
        return list(map(lambda t: self.vocab.get(t, unk), tokens))""",
            ),
            C4,
            C5,
            "# how big is the vocabulary?\nprint(tokenizer.vocab_size, len(tokenizer.vocab))",
            EMB,
            MHA,
            """out_, attn_ = multihead_attn(embeddings, embeddings, embeddings, need_weights=True)
_, per_head_ = multihead_attn(embeddings, embeddings, embeddings, average_attn_weights=False)""",
            """table = pd.DataFrame({tok_col: attn_[0, :, j].detach().numpy() for j, tok_col in enumerate(['the', 'bank', 'approved', 'the_', 'loan'])})
table.columns = tokens
table.index = tokens""",
            """row = attn_[0, tokens.index('bank')].detach().numpy()
fig, ax = plt.subplots()
ax.bar(tokens, row)
plt.show()""",
            """output, attention_weights = out_, attn_
attention_df = table
bank_most_attended = tokens[int(np.argmax(row))]
head_weights = per_head_""",
            LAST,
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t07_bank_typed_in",
        run=True,
        cells=std(
            READ="""print(attention_df.loc['bank'])
bank_most_attended = '{TYPED}'   # the largest number in the row above"""
        ),
        truth=T(reading=(0, "typed in from the printout: does not follow new embeddings")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t08_reading_drops_self",
        run=True,
        cells=std(
            READ="bank_most_attended = attention_df.loc['bank'].drop('bank').idxmax()   # another word, not itself"
        ),
        truth=T(reading=(0, "excludes bank's own column: wrong rule (shows on the data or the variants)")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t09_fresh_module_for_heads",
        run=True,
        cells=std(
            PERHEAD="""# a second module with the same seed has the same weights
torch.manual_seed(0)
mha2 = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
_, head_weights = mha2(embeddings, embeddings, embeddings, average_attn_weights=False)
print(torch.allclose(head_weights.mean(dim=1), attention_weights))"""
        ),
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t10_unknown_gets_pad",
        run=True,
        cells=std(IDS="        return [self.vocab.get(t, 0) for t in tokens]"),
        truth=T(
            tokenizer=(2, "unknown tokens get 0 ([PAD]) instead of [UNK]'s 100 (third check 0)"),
            token_ids=(1, "all five tokens are known: right"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t11_reading_gives_index",
        run=True,
        cells=std(READ="bank_most_attended = int(attention_df.loc['bank'].values.argmax())   # column number"),
        truth=T(reading=(0, "a column number, not the token's label asked for")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t12_index_unlabelled",
        run=True,
        cells=std(
            DF="attention_df = pd.DataFrame(attention_weights[0].detach().numpy(), columns=tokens)\nattention_df",
            READ="bank_most_attended = attention_df.iloc[tokens.index('bank')].idxmax()",
        ),
        truth=T(
            attention_table=(1, "values right (1); rows not labelled by the tokens (0)"),
            reading=(1, "right: reads bank's row by position, the label from the columns"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t13_token_ids_as_list",
        run=True,
        cells=[
            HEAD,
            CLASS.replace("{TOK}", TOK).replace("{IDS}", IDS),
            C4,
            """token_ids = [tokenizer.convert_tokens_to_ids(tokens)]      # a batch of one sentence
print(token_ids)""",
            EMB.replace(
                "embeddings = embedding_layer(token_ids)", "embeddings = embedding_layer(torch.tensor(token_ids))"
            ),
            MHA,
            CALL,
            DF,
            READ,
            PERHEAD,
            LAST,
        ],
        truth=T(token_ids=(1, "a nested list [[1996, 2924, 4844, 1996, 5414]]: the same ids, shape (1, 5)")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t14_regex_with_question_mark_weight_lookup",
        run=True,
        cells=std(
            TOK="""        return re.findall(r"[a-z0-9]+|[.,!?;:]", text.lower())     # words, or one of . , ! ? ; :""",
            EMB=EMB.replace(
                "embeddings = embedding_layer(token_ids)",
                "embeddings = embedding_layer.weight[token_ids]   # the same lookup",
            ),
        ),
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="t15_renamed_embeddings_assigned_at_end",
        run=True,
        cells=[
            HEAD,
            CLASS.replace("{TOK}", TOK).replace("{IDS}", IDS),
            C4,
            C5,
            """vocab_size = tokenizer.vocab_size
embedding_dim = 8

torch.manual_seed(0)
embedding_layer = nn.Embedding(vocab_size, embedding_dim)
x = embedding_layer(token_ids)          # my short name for the embeddings
print(x.shape)""",
            MHA,
            """out, w = multihead_attn(x, x, x)
_, w_heads = multihead_attn(x, x, x, average_attn_weights=False)
df = pd.DataFrame(w[0].detach().numpy(), index=tokens, columns=tokens)
df""",
            """# the names the notebook asks for
embeddings = x
output, attention_weights = out, w
attention_df = df
bank_most_attended = df.loc['bank'].idxmax()
head_weights = w_heads""",
        ],
        truth=T(
            multihead=(3, "right: attention on the embeddings, under the student's own name x"),
            attention_table=(2, "right"),
            reading=(1, "right"),
            per_head=(2, "right"),
        ),
    )
)
