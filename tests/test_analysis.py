"""BM25 analysis: CJK runs as unigrams + bigrams, English stemming unchanged in mixed text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memwiki.config import load
from memwiki.index import bm25
from memwiki.index.analysis import is_cjk
from memwiki.wiki import Wiki


def make_wiki(root, files):
    wiki, _ = Wiki.init(root)
    for rel, (desc, body) in files.items():
        path = wiki.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nname: {path.stem}\ndescription: {desc}\n---\n{body}", encoding="utf-8"
        )
    return wiki


def terms(text: str) -> list[str]:
    return [t.text for t in bm25.analyzer()(text)]


def test_a_chinese_run_is_cut_into_characters_and_pairs():
    assert terms("计费服务") == ["计", "费", "服", "务", "计费", "费服", "服务"]


def test_japanese_kana_and_kanji_are_cut_too():
    out = terms("デプロイ手順")
    assert "デプ" in out and "手順" in out and "順" in out


def test_english_is_stemmed_as_before_also_next_to_cjk():
    assert terms("deploying the services") == ["deploi", "servic"]
    # a CJK run glued to a word is split at the script boundary
    assert terms("计费deploying服务") == ["计", "费", "计费", "deploi", "服", "务", "服务"]
    assert terms("billing 服务 v2.1") == ["bill", "服", "务", "服务", "v2.1"]


def test_stop_words_and_single_letters_still_dropped_but_single_cjk_kept():
    assert terms("what is a pod") == ["pod"]
    assert terms("库") == ["库"]


def test_korean_hangul_is_cjk():
    assert is_cjk("배포") and not is_cjk("deploy")


@given(st.text(max_size=60))
def test_analysis_never_fails_and_never_yields_empty_terms(text):
    for t in terms(text):
        assert t and not t.isspace()


def test_a_cjk_query_finds_a_longer_cjk_description(tmp_path):
    from memwiki.index.search import retrieve

    files = {
        "memory/billing.md": ("计费服务的部署说明", "## 部署\n先打标签，再推到生产环境。\n"),
        "memory/invoice.md": ("发票 PDF 生成", "## 字体\n安装中文字体。\n"),
        "memory/english.md": ("Deploying the billing service", "## Steps\nTag and promote.\n"),
    }
    wiki = make_wiki(tmp_path / "w", files)
    c = load({"wiki": str(wiki.root)}, environ={"HOME": str(tmp_path), "MEMWIKI_EMBED": "none"})
    assert retrieve(wiki, "计费服务", mode="bm25", config=c).paths()[0] == "memory/billing.md"
    # English stemming still works in the same index
    hits = retrieve(wiki, "deploy billing services", mode="bm25", config=c).paths()
    assert hits[0] == "memory/english.md"


MIXED = st.text(
    alphabet=st.sampled_from(
        list("abcXYZ09_. -\n,'é中文计费かナ한ｦ") + ["\u3040", "\u30ff", "\u2028"]
    ),
    max_size=80,
)


def tokens(tokenizer, text: str) -> list[tuple]:
    return [
        (t.text, t.pos, t.startchar, t.endchar)
        for t in tokenizer(text, positions=True, chars=True, start_pos=3, start_char=5)
    ]


@given(MIXED)
def test_the_tokenizer_matches_the_full_pattern_on_any_text(text):
    # ASCII text goes through a small pattern that must find exactly what the full CJK-aware
    # pattern finds; other text through the full one (analysis.Tokenizer).
    from whoosh.analysis import RegexTokenizer

    from memwiki.index.analysis import TOKEN_PATTERN, Tokenizer

    assert tokens(Tokenizer(), text) == tokens(RegexTokenizer(TOKEN_PATTERN), text)
    ascii_only = text.encode("ascii", "ignore").decode()
    assert tokens(Tokenizer(), ascii_only) == tokens(RegexTokenizer(TOKEN_PATTERN), ascii_only)


@given(st.text(max_size=6))
def test_is_cjk_is_the_character_class(text):
    import re

    from memwiki.index.analysis import CJK_CHARS

    assert is_cjk(text) == bool(re.match(f"[{CJK_CHARS}]", text))


def test_opening_an_index_compiles_no_cjk_class(tmp_path):
    # Whoosh pickles the analyzer into its table of contents: the tokenizer in it holds the
    # small pattern only, and an index written by an older memwiki gets it at its next commit.
    import pickle

    from whoosh import index as windex
    from whoosh.analysis import RegexTokenizer

    from memwiki.index import bm25_update
    from memwiki.index.analysis import TOKEN_PATTERN, Tokenizer
    from memwiki.index.chunker import Item

    def item(n: int, text: str) -> Item:
        return Item(f"memory/f{n}.md", "memory", f"f{n}", "d", (), "h", 1, 2, text)

    schema = bm25.schema()
    old = pickle.loads(pickle.dumps(schema))
    for name in bm25.FIELD_BOOSTS:  # the schema as memwiki wrote it before Tokenizer
        old[name].analyzer.items[0] = RegexTokenizer(TOKEN_PATTERN)
    ix = windex.create_in(str(tmp_path), old, indexname=bm25.INDEX_NAME)
    writer = ix.writer()
    writer.add_document(**bm25.doc_fields(item(0, "计费 billing")))
    writer.commit()
    before = bm25.search(tmp_path, "计费 billing", 5)
    assert type(ix.schema["body"].analyzer.items[0]) is RegexTokenizer
    bm25_update.update(tmp_path, [], [item(1, "billing again")], optimize=False)
    stored = windex.open_dir(str(tmp_path), indexname=bm25.INDEX_NAME).schema
    assert type(stored["body"].analyzer.items[0]) is Tokenizer
    assert TOKEN_PATTERN.encode() not in pickle.dumps(stored)
    assert [i for i, _ in bm25.search(tmp_path, "计费", 5)] == [i for i, _ in before]
