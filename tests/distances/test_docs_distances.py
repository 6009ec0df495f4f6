"""The python code blocks of docs/distances.md run, in order, in one namespace."""
from _helpers import run_doc_blocks


def test_doc_code_blocks_run():
    run_doc_blocks("distances.md", 5)
