"""Loaders: SentEval STS and transfer folders, jsonl/csv/tsv files, Hugging Face folders, BEIR folders, mteb tasks."""

from __future__ import annotations

import re

import pytest

from st_infocse.evaluation import (
    DataFormatError,
    STSPairs,
    find_senteval_root,
    load_beir_folder,
    load_mteb_sts,
    load_senteval_sts,
    load_senteval_transfer,
    load_sts,
    load_sts_file,
    load_sts_hf,
)
from st_infocse.evaluation.loaders import canonical_sts_name, canonical_transfer_name
from st_infocse.files import FileFormatError

# ---------------------------------------------------------------------------------------------------- SentEval STS


def _sts12(ev, root):
    subsets = {
        "MSRpar": [("a  cat  sat", "a cat sits", "4.0"), ("the dog", "a dog", "3.25")],
        "MSRvid": [("x", "y", "1.5"), ("p", "q", "")],
        "SMTeuroparl": [("one", "two", "2")],
        "surprise.OnWN": [("u", "v", "0.0")],
        "surprise.SMTnews": [("m", "n", "5")],
    }
    return ev.write_sts_year(root, "STS12", subsets)


def test_senteval_sts_year_concatenates_subsets_and_skips_unscored(ev, tmp_path):
    _sts12(ev, tmp_path)
    pairs = load_senteval_sts(tmp_path, "sts12")
    assert pairs.name == "STS12"
    # SentEval order, the unscored MSRvid pair dropped, whitespace normalised as SentEval's split/join
    assert pairs.sentences1 == ["a cat sat", "the dog", "x", "one", "u", "m"]
    assert pairs.scores == [4.0, 3.25, 1.5, 2.0, 0.0, 5.0]
    assert pairs.subsets == {"MSRpar": 2, "MSRvid": 1, "SMTeuroparl": 1, "surprise.OnWN": 1, "surprise.SMTnews": 1}
    assert pairs.split == "test" and pairs.source.startswith("senteval:")


def test_senteval_sts_errors_name_file_and_line(ev, tmp_path):
    folder = _sts12(ev, tmp_path)
    ev.write_lines(folder / "STS.gs.MSRpar.txt", ["4.0", "high"])
    with pytest.raises(DataFormatError, match=r"STS\.gs\.MSRpar\.txt, line 2: score 'high' is not a number"):
        load_senteval_sts(tmp_path, "STS12")

    ev.write_lines(folder / "STS.gs.MSRpar.txt", ["4.0"])
    with pytest.raises(DataFormatError, match=r"STS\.gs\.MSRpar\.txt: 1 scores for 2 sentence pairs"):
        load_senteval_sts(tmp_path, "STS12")

    ev.write_lines(folder / "STS.gs.MSRpar.txt", ["4.0", "3.0"])
    ev.write_lines(folder / "STS.input.MSRpar.txt", ["a\tb", "only one sentence"])
    with pytest.raises(DataFormatError, match=r"STS\.input\.MSRpar\.txt, line 2: expected 2 tab-separated"):
        load_senteval_sts(tmp_path, "STS12")

    (folder / "STS.input.MSRpar.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"STS\.input\.MSRpar\.txt: file not found"):
        load_senteval_sts(tmp_path, "STS12")


def test_senteval_sts_missing_task_folder(ev, tmp_path):
    _sts12(ev, tmp_path)
    with pytest.raises(FileNotFoundError, match=r"STS13-en-test: folder not found \(needed for STS13\)"):
        load_senteval_sts(tmp_path, "STS13")
    with pytest.raises(FileNotFoundError, match="folder not found"):
        load_senteval_sts(tmp_path / "nowhere", "STS12")


def test_senteval_invalid_utf8_names_line(ev, tmp_path):
    folder = _sts12(ev, tmp_path)
    (folder / "STS.input.MSRpar.txt").write_bytes(b"a\tb\nc\xff\td\n")
    with pytest.raises(FileFormatError, match=r"STS\.input\.MSRpar\.txt, line 2: not UTF-8"):
        load_senteval_sts(tmp_path, "STS12")


def test_senteval_stsb_splits_and_errors(ev, tmp_path):
    ev.write_stsb(tmp_path, "dev", [("a b", "c d", 4.2), ("e", "f", 0.5)])
    path = ev.write_stsb(tmp_path, "test", [("g", "h", 3.0)])
    dev = load_senteval_sts(tmp_path, "STSBenchmark", split="validation")
    assert (dev.name, dev.split, dev.sentences1, dev.sentences2, dev.scores) == (
        "STS-B",
        "dev",
        ["a b", "e"],
        ["c d", "f"],
        [4.2, 0.5],
    )
    assert load_senteval_sts(tmp_path, "stsb").scores == [3.0]
    with pytest.raises(ValueError, match="only a test split"):
        load_senteval_sts(tmp_path, "STS14", split="dev")

    ev.write_lines(path, ["main-captions\tMSRvid\t2012test\t0001\t3.0\tonly one"])
    with pytest.raises(DataFormatError, match=r"sts-test\.csv, line 1: expected at least 7 tab-separated columns"):
        load_senteval_sts(tmp_path, "STS-B")
    ev.write_lines(path, [])
    with pytest.raises(DataFormatError, match=r"sts-test\.csv: file is empty"):
        load_senteval_sts(tmp_path, "STS-B")


def test_senteval_sick_reads_columns_by_header(ev, tmp_path):
    ev.write_sick(tmp_path, [("a boy", "a girl", 3.3), ("x", "y", 1.0)])
    pairs = load_senteval_sts(tmp_path, "SICKRelatedness")
    assert (pairs.name, pairs.sentences1, pairs.sentences2, pairs.scores) == (
        "SICK-R",
        ["a boy", "x"],
        ["a girl", "y"],
        [3.3, 1.0],
    )
    assert "SentEval SICK test split (2 pairs)" in pairs.note

    ev.write_lines(tmp_path / "SICK" / "SICK_test_annotated.txt", ["pair_ID\tsentence_A\tsentence_B", "1\ta\tb"])
    with pytest.raises(
        DataFormatError, match=r"SICK_test_annotated\.txt, line 1: header lacks column\(s\) relatedness"
    ):
        load_senteval_sts(tmp_path, "SICK-R")

    ev.write_lines(
        tmp_path / "SICK" / "SICK_test_annotated.txt",
        ["pair_ID\tsentence_A\tsentence_B\trelatedness_score", "1\ta\tb\t2.0", "2\tc\td\tn/a"],
    )
    with pytest.raises(DataFormatError, match=r"line 3: relatedness_score 'n/a' is not a number"):
        load_senteval_sts(tmp_path, "SICK-R")


def test_find_senteval_root_accepts_common_layouts(tmp_path):
    (tmp_path / "SentEval" / "data" / "downstream" / "STS").mkdir(parents=True)
    assert find_senteval_root(tmp_path / "SentEval") == tmp_path / "SentEval" / "data" / "downstream"
    (tmp_path / "shared" / "senteval" / "SICK").mkdir(parents=True)
    assert find_senteval_root(tmp_path / "shared") == tmp_path / "shared" / "senteval"
    with pytest.raises(FileNotFoundError, match="not a SentEval data/downstream folder"):
        find_senteval_root(tmp_path / "shared" / "senteval" / "SICK")


@pytest.mark.parametrize(
    ("given", "expected"),
    [("STS12", "STS12"), ("sts-16", "STS16"), ("STSBenchmark", "STS-B"), ("sts_b", "STS-B"), ("SICK", "SICK-R")],
)
def test_canonical_sts_names(given, expected):
    assert canonical_sts_name(given) == expected


# ---------------------------------------------------------------------------------------------------- files


def test_sts_file_formats(ev, tmp_path):
    jsonl = ev.write_jsonl(tmp_path / "pairs.jsonl", [{"sentence1": "a", "sentence2": "b", "score": 4}, {}][:1])
    ev.write_lines(jsonl, [*jsonl.read_text().splitlines(), "", '{"sentence1": "c", "sentence2": "d", "score": 2.5}'])
    pairs = load_sts_file(jsonl)
    assert (pairs.name, pairs.sentences1, pairs.scores, pairs.source) == (
        "pairs",
        ["a", "c"],
        [4.0, 2.5],
        f"file:{jsonl}",
    )

    csv_file = ev.write_lines(tmp_path / "pairs.csv", ["s1,s2,gold", '"a, quoted",b,1', "c,d,0.5"])
    pairs = load_sts_file(csv_file, sentence1_column="s1", sentence2_column="s2", score_column="gold", name="stsb")
    assert (pairs.name, pairs.sentences1, pairs.scores) == ("STS-B", ["a, quoted", "c"], [1.0, 0.5])

    tsv = ev.write_lines(tmp_path / "pairs.tsv", ["sentence1\tsentence2\tscore", "a\tb\t3"])
    assert load_sts_file(tsv).scores == [3.0]

    # a .json list of objects: a bad one is named by its place in the list
    listed = ev.write_lines(tmp_path / "pairs.json", ['[{"sentence1": "a", "sentence2": "b", "score": 1},', "{}]"])
    with pytest.raises(DataFormatError, match=r"pairs\.json, record 2: missing column\(s\) sentence1"):
        load_sts_file(listed)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            ['{"sentence1": "a", "sentence2": "b", "score": 1}', '{"sentence1": "a", "score": 1}'],
            r"line 2: missing column\(s\) sentence2",
        ),
        (['{"sentence1": "a", "sentence2": "b", "score": "high"}'], r"line 1: score 'high' is not a number"),
        (
            [
                '{"sentence1": "a", "sentence2": "b", "score": 1}',
                "",
                '{"sentence1": "c", "sentence2": "d", "score": "2"}',
            ],
            r"line 3: score is a string where line 1 has a number \(one JSON type per column\)",
        ),
        (
            ['{"sentence1": "a", "sentence2": "b", "score": 1}', "", "{}", '{"sentence1": "c", "score": 2}'],
            r"line 3: missing",
        ),
        (['{"sentence1": "a", "sentence2": "b", "score": NaN}'], r"line 1: score nan is not a finite number"),
        (['{"sentence1": "a", "sentence2": "b", "score": 1}', "{oops"], r"line 2: not valid JSON"),
        (["[1, 2, 3]"], r"pairs\.jsonl: missing column\(s\) sentence1, sentence2, score \(found: text\)"),
        (['{"sentence1": 3, "sentence2": "b", "score": 1}'], r"line 1: sentence1 must be a string"),
        ([], r"pairs\.jsonl: file is empty"),
        (["", "  "], r"pairs\.jsonl: file is empty"),
    ],
)
def test_sts_jsonl_errors(ev, tmp_path, lines, message):
    path = ev.write_lines(tmp_path / "pairs.jsonl", lines)
    with pytest.raises(FileFormatError, match=message) as info:
        load_sts_file(path)
    assert str(path) in str(info.value)


def test_sts_csv_errors(ev, tmp_path):
    # a short row's missing field is read as empty, and the empty score is named at its line
    path = ev.write_lines(tmp_path / "p.csv", ["sentence1,sentence2,score", "a,b,1", "", "c,d"])
    with pytest.raises(DataFormatError, match=r"p\.csv, line 4: score '' is not a number"):
        load_sts_file(path)
    # a longer row: pandas' own error names the line; a first row longer than the header is caught too
    path = ev.write_lines(tmp_path / "p.csv", ["sentence1,sentence2,score", "a,b,1", "c,d,2,extra"])
    with pytest.raises(
        DataFormatError, match=r"p\.csv: not readable by datasets \(.*Expected 3 fields in line 3, saw 4"
    ):
        load_sts_file(path)
    path = ev.write_lines(tmp_path / "p.csv", ["sentence1,sentence2,score", "a,b,c,1", "d,e,2"])
    with pytest.raises(DataFormatError, match=r"p\.csv, line 2: expected 3 columns like the header, found more"):
        load_sts_file(path)
    # a quoted field over two lines: the bad row after it is still named by its own line
    path = ev.write_lines(tmp_path / "p.csv", ["sentence1,sentence2,score", '"a\nb",c,1', "d,e,nan"])
    with pytest.raises(DataFormatError, match=r"p\.csv, line 4: score 'nan' is not a finite number"):
        load_sts_file(path)
    path = ev.write_lines(tmp_path / "p.csv", ["sentence1,sentence2,label", "a,b,1"])
    with pytest.raises(
        DataFormatError, match=r"line 1: missing column\(s\) score \(found: sentence1, sentence2, label\)"
    ):
        load_sts_file(path)
    path = ev.write_lines(tmp_path / "p.csv", ["sentence1,sentence2,score"])
    with pytest.raises(DataFormatError, match="file is empty"):
        load_sts_file(path)
    with pytest.raises(ValueError, match="unsupported file type '.txt'"):
        load_sts_file(ev.write_lines(tmp_path / "p.txt", ["x"]))
    with pytest.raises(FileNotFoundError, match="missing.jsonl: file not found"):
        load_sts_file(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------------------------------------------- HF folders


def test_sts_hf_folders(ev, tmp_path):
    from datasets import Dataset, DatasetDict

    rows = {"sentence1": ["a", "b"], "sentence2": ["c", "d"], "score": [0.2, 0.9]}
    Dataset.from_dict(rows).save_to_disk(str(tmp_path / "single"))
    assert load_sts_hf(tmp_path / "single").scores == [0.2, 0.9]

    DatasetDict(
        {"validation": Dataset.from_dict(rows), "test": Dataset.from_dict({k: v[:1] for k, v in rows.items()})}
    ).save_to_disk(str(tmp_path / "dd"))
    assert len(load_sts_hf(tmp_path / "dd", split="dev")) == 2
    assert load_sts_hf(tmp_path / "dd", split="test", name="stsb").name == "STS-B"
    with pytest.raises(DataFormatError, match=r"no split 'train' \(available: validation, test\)"):
        load_sts_hf(tmp_path / "dd", split="train")

    ev.write_jsonl(tmp_path / "files" / "test.jsonl", [{"sentence1": "x", "sentence2": "y", "score": 3.0}])
    pairs = load_sts_hf(tmp_path / "files")
    assert (pairs.name, pairs.sentences1, pairs.scores, pairs.source) == (
        "files",
        ["x"],
        [3.0],
        f"hf:{tmp_path / 'files'}",
    )


def test_sts_hf_folder_errors(tmp_path):
    from datasets import Dataset

    Dataset.from_dict({"sentence1": ["a"], "sentence2": ["b"]}).save_to_disk(str(tmp_path / "nocol"))
    with pytest.raises(DataFormatError, match=r"nocol: missing column\(s\) score \(found: sentence1, sentence2\)"):
        load_sts_hf(tmp_path / "nocol")
    Dataset.from_dict({"sentence1": ["a", "b"], "sentence2": ["c", "d"], "score": ["1", "x"]}).save_to_disk(
        str(tmp_path / "text")
    )
    with pytest.raises(DataFormatError, match=r"text, row 2: score 'x' is not a number"):
        load_sts_hf(tmp_path / "text")
    with pytest.raises(FileNotFoundError, match="folder not found"):
        load_sts_hf(tmp_path / "absent")


def test_load_sts_dispatches(ev, tmp_path):
    ev.write_stsb(tmp_path / "se", "test", [("a", "b", 1.0)])
    assert load_sts(tmp_path / "se", "STS-B").source.startswith("senteval:")
    f = ev.write_jsonl(tmp_path / "x.jsonl", [{"sentence1": "a", "sentence2": "b", "score": 2}])
    assert load_sts(f).scores == [2.0]
    given = STSPairs("mine", ["a"], ["b"], [1.0], "memory")
    assert load_sts(given) is given
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_sts(tmp_path / "absent.jsonl")
    with pytest.raises(ValueError, match="needs a task name"):
        load_sts("mteb")
    with pytest.raises(ValueError, match="equally long"):
        STSPairs("bad", ["a"], [], [1.0], "memory")


# ---------------------------------------------------------------------------------------------------- mteb


def test_load_mteb_sts_from_a_task_object():
    mteb = pytest.importorskip("mteb")
    from datasets import Dataset

    task = mteb.get_task("SICK-R")
    task.dataset = {"test": Dataset.from_dict({"sentence1": ["a", "b"], "sentence2": ["c", "d"], "score": [1, 4.5]})}
    task.data_loaded = True
    pairs = load_mteb_sts(task)
    assert (pairs.name, pairs.sentences1, pairs.sentences2, pairs.scores) == (
        "SICK-R",
        ["a", "b"],
        ["c", "d"],
        [1.0, 4.5],
    )
    assert pairs.source == "mteb:SICK-R"
    assert "not the papers' 4,927-pair test split" in pairs.note
    with pytest.raises(ValueError, match="has no split 'dev'"):
        load_mteb_sts(task, split="dev")


def test_load_mteb_sts_offline_error_is_clear(monkeypatch):
    mteb = pytest.importorskip("mteb")
    task = mteb.get_task("STS12")

    def fail(*args, **kwargs):
        raise ConnectionError("hub unreachable")

    monkeypatch.setattr(task, "load_data", fail)
    with pytest.raises(RuntimeError, match=r"could not load mteb task STS12 .*Offline\? Pass a local folder"):
        load_mteb_sts(task)


def test_loading_from_mteb_leaves_the_global_random_states_as_found(monkeypatch):
    """mteb seeds Python's, NumPy's and torch's generators when it builds or loads a task; a training run that
    loads an evaluator from it must keep its own random streams."""
    mteb = pytest.importorskip("mteb")
    import random

    import numpy as np
    import torch
    from datasets import Dataset

    from st_infocse.evaluation.loaders.common import mteb_task

    def reseeding_load(self):
        random.seed(42), np.random.seed(42), torch.manual_seed(42)  # what mteb does
        self.dataset = {"test": Dataset.from_dict({"sentence1": ["a"], "sentence2": ["b"], "score": [2.0]})}
        self.data_loaded = True

    monkeypatch.setattr(type(mteb.get_task("SICK-R")), "load_data", reseeding_load)
    random.seed(7), np.random.seed(7), torch.manual_seed(7)
    states = random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state()
    assert mteb_task("SICK-R", "STS").metadata.name == "SICK-R"
    assert load_mteb_sts("SICK-R").scores == [2.0]
    assert random.getstate() == states[0]
    assert np.array_equal(np.random.get_state()[1], states[1])
    assert torch.equal(torch.get_rng_state(), states[2])


# ---------------------------------------------------------------------------------------------------- BEIR


def test_beir_folder(ev, tmp_path):
    folder = ev.write_beir(
        tmp_path / "toy",
        corpus={"d1": "first doc", "d2": "second doc"},
        queries={"q1": "find first", "q2": "no judgements", "3": "numeric id"},
        qrels=[("q1", "d1", 1), ("q1", "d2", 0), ("3", "d2", 2)],
    )
    ev.write_jsonl(
        folder / "corpus.jsonl", [{"_id": "d1", "title": "T", "text": "first doc"}, {"_id": 7, "text": "no title"}]
    )
    data = load_beir_folder(folder)
    assert data.name == "toy" and data.split == "test"
    assert data.corpus == {"d1": {"title": "T", "text": "first doc"}, "7": {"title": "", "text": "no title"}}
    assert data.queries == {"q1": "find first", "3": "numeric id"}  # only judged queries, like beir
    assert data.qrels == {"q1": {"d1": 1, "d2": 0}, "3": {"d2": 2}}


@pytest.mark.parametrize(
    ("target", "lines", "message"),
    [
        ("corpus.jsonl", ['{"_id": "d1"}'], r"corpus\.jsonl, line 1: missing field\(s\) text"),
        ("corpus.jsonl", ['{"_id": "d1", "text": "a"}', '{"_id": "d1", "text": "b"}'], r"line 2: duplicate _id 'd1'"),
        ("queries.jsonl", ['{"_id": "q1", "text": "a"}', '{"_id": "q1", "text": "b"}'], r"queries\.jsonl, line 2: duplicate _id 'q1'"),
        ("corpus.jsonl", [], r"corpus\.jsonl: file is empty"),
        ("queries.jsonl", ['{"text": "q"}'], r"queries\.jsonl, line 1: missing field\(s\) _id"),
        (
            "qrels/test.tsv",
            ["query-id\tcorpus-id\tscore", "q1\td1\tyes"],
            r"test\.tsv, line 2: score 'yes' is not an integer",
        ),
        (
            "qrels/test.tsv",
            ["query-id\tcorpus-id\tscore", "q1\td1"],
            r"test\.tsv, line 2: expected query-id, corpus-id, score",
        ),
        (
            "qrels/test.tsv",
            ["query-id\tcorpus-id\tscore", "q9\td1\t1"],
            r"line 2: query id 'q9' is not in queries\.jsonl",
        ),
        ("qrels/test.tsv", ["query-id\tcorpus-id\tscore"], r"test\.tsv: no relevance judgements"),
    ],
)
def test_beir_folder_errors(ev, tmp_path, target, lines, message):
    folder = ev.write_beir(tmp_path / "toy", {"d1": "a"}, {"q1": "b"}, [("q1", "d1", 1)])
    ev.write_lines(folder / target, lines)
    with pytest.raises(DataFormatError, match=message):
        load_beir_folder(folder)


def test_beir_folder_counts_unknown_judged_documents_in_a_warning_or_refuses_them(ev, tmp_path, caplog):
    folder = ev.write_beir(tmp_path / "toy", {"d1": "a"}, {"q1": "b"}, [("q1", "d1", 1), ("q1", "d9", 1)])
    assert load_beir_folder(folder).qrels == {"q1": {"d1": 1, "d9": 1}}
    assert [r.getMessage() for r in caplog.records] == [
        f"{folder / 'qrels' / 'test.tsv'}: names 1 document id not in corpus.jsonl ('d9')"
    ]
    caplog.clear()
    with pytest.raises(DataFormatError, match=r"test\.tsv: names 1 document id not in corpus\.jsonl \('d9'\)$"):
        load_beir_folder(folder, refuse_unknown=True)
    assert not caplog.records


def test_beir_folder_missing_files(ev, tmp_path):
    with pytest.raises(FileNotFoundError, match="folder not found"):
        load_beir_folder(tmp_path / "absent")
    folder = ev.write_beir(tmp_path / "toy", {"d1": "a"}, {"q1": "b"}, [("q1", "d1", 1)])
    with pytest.raises(FileNotFoundError, match=re.escape(str(folder / "qrels" / "dev.tsv")) + ": file not found"):
        load_beir_folder(folder, split="dev")


# ---------------------------------------------------------------------------------------------------- transfer


def _transfer_tree(ev, root):
    ev.write_lines(root / "MR" / "rt-polarity.pos", ["good  film", "", "great"])
    ev.write_lines(root / "MR" / "rt-polarity.neg", ["bad film"])
    (root / "SUBJ").mkdir()
    (root / "SUBJ" / "subj.objective").write_bytes("caf\xe9 facts\n".encode("latin-1"))
    ev.write_lines(root / "SUBJ" / "subj.subjective", ["i feel"])
    ev.write_lines(root / "SST" / "binary" / "sentiment-train", ["nice \t1", "awful \t0"])
    ev.write_lines(root / "SST" / "binary" / "sentiment-dev", ["fine \t1"])
    ev.write_lines(root / "SST" / "binary" / "sentiment-test", ["dull \t0"])
    ev.write_lines(root / "TREC" / "train_5500.label", ["DESC:manner How did it go ?", "NUM:date When was it ?"])
    ev.write_lines(root / "TREC" / "TREC_10.label", ["HUM:ind Who is it ?"])
    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    ev.write_lines(root / "MRPC" / "msr_paraphrase_train.txt", [header, "1\t1\t2\ta b\tb a", "0\t3\t4\tc\td"])
    ev.write_lines(root / "MRPC" / "msr_paraphrase_test.txt", [header, "1\t5\t6\te\tf"])


def test_transfer_loaders(ev, tmp_path):
    _transfer_tree(ev, tmp_path)
    mr = load_senteval_transfer(tmp_path, "mr")
    assert (mr.train, mr.train_labels, mr.test) == (["good film", "great", "bad film"], [1, 1, 0], None)
    subj = load_senteval_transfer(tmp_path, "SUBJ")
    assert subj.train == ["caf\xe9 facts", "i feel"] and subj.train_labels == [1, 0]  # latin-1 fallback
    sst = load_senteval_transfer(tmp_path, "SST-2")
    assert (sst.train, sst.train_labels, sst.dev, sst.test_labels) == (["nice", "awful"], [1, 0], ["fine"], [0])
    trec = load_senteval_transfer(tmp_path, "TREC")
    assert (trec.train, trec.train_labels, trec.test, trec.test_labels) == (
        ["How did it go ?", "When was it ?"],
        [1, 5],
        ["Who is it ?"],
        [3],
    )
    mrpc = load_senteval_transfer(tmp_path, "MRPC")
    assert mrpc.train == [("a b", "b a"), ("c", "d")] and mrpc.test_labels == [1]


def test_transfer_loader_errors(ev, tmp_path):
    _transfer_tree(ev, tmp_path)
    ev.write_lines(tmp_path / "TREC" / "TREC_10.label", ["HUM:ind Who?", "WHAT:x is this ?"])
    with pytest.raises(DataFormatError, match=r"TREC_10\.label, line 2: expected '<COARSE>:<fine> <question>'"):
        load_senteval_transfer(tmp_path, "TREC")
    ev.write_lines(tmp_path / "SST" / "binary" / "sentiment-dev", ["fine \tpositive"])
    with pytest.raises(DataFormatError, match=r"sentiment-dev, line 1: label 'positive' is not an integer"):
        load_senteval_transfer(tmp_path, "SST2")
    ev.write_lines(tmp_path / "MRPC" / "msr_paraphrase_test.txt", ["header", "1\t5\t6\te"])
    with pytest.raises(DataFormatError, match=r"msr_paraphrase_test\.txt, line 2: expected 5 tab-separated columns"):
        load_senteval_transfer(tmp_path, "MRPC")
    ev.write_lines(tmp_path / "MR" / "rt-polarity.neg", [""])
    with pytest.raises(DataFormatError, match=r"rt-polarity\.neg: file is empty"):
        load_senteval_transfer(tmp_path, "MR")
    with pytest.raises(FileNotFoundError, match=r"custrev\.pos: file not found"):
        load_senteval_transfer(tmp_path, "CR")
    with pytest.raises(ValueError, match="unknown transfer task 'SNLI'"):
        canonical_transfer_name("SNLI")
