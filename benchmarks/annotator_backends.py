"""IDC's annotator on faster backends: does all-mpnet-base-v2 in int8 (torch dynamic quantisation) or on ONNX Runtime
/ OpenVINO mine the same pairs as fp32 torch, and how much faster?

The annotator's embeddings only choose pairs (``mine_pairs``: top-1 neighbours inside a document, clusters, every
pair of a cluster), so a backend that mines the same pairs is a free gain. Per domain (a fixed-seed sample of SciFact
abstracts and Reuters-21578 training articles, split and filtered as the adaptation benchmark trains on them), each
backend mines once at a given thread count; the run records

- the mined pair set's Jaccard similarity with fp32 torch's on the same documents (a pair is its document, anchor
  and positive);
- the mining time and where it goes: loading the model, encoding (and inside it, tokenising), the graph work, reading
  documents and writing pairs (``MiningReport``'s timers);
- the machine's load average (the CPU may be shared: timings are then approximate).

Each ``run`` adds its rows to ``results/annotator_backends.json`` (a repeated key replaces its row) and writes the
pairs under ``--work`` for the Jaccard of later backends; ``report`` writes the markdown table and README block::

    python -m benchmarks.annotator_backends run --backends fp32 torch-int8 --threads 1 --docs 500
    python -m benchmarks.annotator_backends report

Backends: ``fp32`` (torch), ``torch-bf16`` (the fp32 model mining under bf16 autocast: ``mine_pairs``'s
``precision="bf16"``, the package's own option), ``torch-int8`` (``torch.ao.quantization.quantize_dynamic`` on the
``Linear`` layers), ``onnx`` / ``onnx-int8`` (ONNX Runtime; int8 as ``export_dynamic_quantized_onnx_model`` makes it: int8 per-channel
weights, activations quantised per batch), ``openvino`` (f32 precision hint), ``openvino-bf16`` (OpenVINO's default
on a CPU with bf16 units), ``openvino-int8`` (int8 weights by NNCF's weight compression, no calibration) and
``openvino-int8-static`` (NNCF post-training quantisation, weights and activations, calibrated on 300 of the domain's
own sentences, where ``export_static_quantized_openvino_model`` would download GLUE SST-2); ``st-openvino`` and
``st-openvino-int8`` load through sentence-transformers' own ``backend="openvino"`` (the latter with
``model_kwargs={"load_in_8bit": True}``), where optimum-intel imports (see below).

sentence-transformers' own ``backend="onnx"`` / ``"openvino"`` load through optimum-onnx and optimum-intel, and
neither imports next to sentence-transformers 6.2, transformers 5.24 and huggingface-hub 2.4: optimum-onnx 0.1 needs
transformers < 4.58 (sentence-transformers 6 needs >= 5), optimum-intel 2.2 transformers < 5.6 and huggingface-hub
< 1.22 (which the installed datasets does not import with). So the script runs the same runtimes directly: the encoder is exported once
(``torch.onnx.export`` / ``openvino.convert_model``, under ``--work``) and the SentenceTransformer's Transformer module
runs it, with the model's own tokeniser, pooling and normalisation. The rows need ``onnx``, ``onnxruntime``,
``openvino`` and ``nncf`` importable; a backend that fails to load is recorded as skipped with its error.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.adaptation_domains import training_documents
from benchmarks.harness import RESULTS, SHARED, commit, machine, mpnet_path, provenance, read_jsonl, update_block

OUT = RESULTS / "annotator_backends.json"
SEED = 0
BACKENDS = ("fp32", "torch-bf16", "torch-int8", "onnx", "onnx-int8", "openvino", "openvino-bf16", "openvino-int8",
            "openvino-int8-static", "st-openvino", "st-openvino-int8")
CALIBRATION_SENTENCES = 300
DOMAINS = ("scifact", "reuters")
REFERENCE = "fp32"


def load_documents(domain: str, n: int, data: Path = SHARED) -> list[dict[str, Any]]:
    """A ``SEED`` sample of ``n`` documents of the domain, as lists of sentences of at least five words."""
    if domain == "scifact":
        rows = read_jsonl(data / "beir" / "scifact" / "corpus.jsonl")
        items = [(r["_id"], r["text"]) for r in rows if r["text"].strip()]
    else:
        rows = read_jsonl(data / "docs" / "reuters21578" / "reuters21578_docs.jsonl.gz")
        items = [(r["id"], r["text"]) for r in rows if r["text"].strip() and r["lewissplit"] == "TRAIN"]
    sample = random.Random(SEED).sample(items, min(n, len(items)))
    return training_documents(sample, None)


# ------------------------------------------------------------------------------------------------ backends


class _TokensToStates(torch.nn.Module):
    """The Hugging Face encoder as a function of two tensors, the form the exporters trace."""

    def __init__(self, encoder: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _run_transformer_with(model: Any, run: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Any:
    """``model`` with its Transformer module's forward done by ``run`` (token ids and mask -> hidden states):
    tokenising, pooling and normalising stay the SentenceTransformer's own."""

    def forward(features: dict[str, Any], **_: Any) -> dict[str, Any]:
        hidden = run(features["input_ids"].numpy(), features["attention_mask"].numpy())
        features["token_embeddings"] = torch.from_numpy(np.ascontiguousarray(hidden, dtype=np.float32))
        return features

    model[0].forward = forward
    return model


def _example(model: Any) -> dict[str, torch.Tensor]:
    features = model.preprocess(["An example sentence to trace.", "Another one."])
    return {"input_ids": features["input_ids"], "attention_mask": features["attention_mask"]}


def _onnx_session(model: Any, work: Path, int8: bool, threads: int) -> Any:
    import onnxruntime as ort

    fp32 = work / "mpnet.onnx"
    if not fp32.is_file():
        example = _example(model)
        torch.onnx.export(_TokensToStates(model[0].auto_model.eval()), (example["input_ids"], example["attention_mask"]),
                          str(fp32), input_names=["input_ids", "attention_mask"], output_names=["hidden"],
                          dynamic_axes={name: {0: "batch", 1: "tokens"} for name in
                                        ("input_ids", "attention_mask", "hidden")}, dynamo=False)
    path = fp32
    if int8:  # what export_dynamic_quantized_onnx_model does: int8 weights, activations quantised per batch
        from onnxruntime.quantization import QuantType, quantize_dynamic

        path = work / "mpnet-qint8.onnx"
        if not path.is_file():
            quantize_dynamic(str(fp32), str(path), weight_type=QuantType.QInt8, per_channel=True)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _openvino_model(model: Any, work: Path, variant: str, threads: int, calibration: tuple[str, list[str]]) -> Any:
    import openvino as ov

    core = ov.Core()
    fp32 = work / "mpnet-openvino.xml"
    if not fp32.is_file():
        example = _example(model)
        converted = ov.convert_model(_TokensToStates(model[0].auto_model.eval()), example_input=example,
                                     input=[("input_ids", ov.PartialShape([-1, -1]), ov.Type.i64),
                                            ("attention_mask", ov.PartialShape([-1, -1]), ov.Type.i64)])
        ov.save_model(converted, str(fp32))
    path = fp32
    if variant in ("openvino-int8", "openvino-int8-static"):
        import nncf

        tag, sentences = calibration
        path = work / (f"{variant}-{tag}.xml" if variant == "openvino-int8-static" else f"{variant}.xml")
        if not path.is_file():
            base = core.read_model(str(fp32))
            if variant == "openvino-int8":  # int8 weights, fp32 activations: needs no calibration data
                quantized = nncf.compress_weights(base)
            else:  # int8 weights and activations, calibrated on the documents' own sentences (as the PTQ export)
                def features(sentence: str) -> dict[str, np.ndarray]:
                    return {k: v.numpy() for k, v in _example_of(model, sentence).items()}

                quantized = nncf.quantize(base, nncf.Dataset(sentences, features),
                                          model_type=nncf.ModelType.TRANSFORMER, subset_size=len(sentences))
            ov.save_model(quantized, str(path))
    precision = "bf16" if variant == "openvino-bf16" else "f32"
    compiled = core.compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
                                                     "INFERENCE_PRECISION_HINT": precision})
    return compiled


def _example_of(model: Any, sentence: str) -> dict[str, torch.Tensor]:
    features = model.preprocess([sentence])
    return {"input_ids": features["input_ids"], "attention_mask": features["attention_mask"]}


def load_annotator(backend: str, path: Path, threads: int, work: Path, calibration: tuple[str, list[str]]) -> Any:
    """all-mpnet-base-v2 on ``backend`` using ``threads`` threads (torch's and the runtime's own setting);
    ``calibration`` names and gives the sentences a statically quantised model is calibrated on."""
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    if backend.startswith("st-openvino"):  # sentence-transformers' own backend (where optimum-intel imports)
        ov_config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "INFERENCE_PRECISION_HINT": "f32"}
        kwargs = {"ov_config": ov_config} | ({"load_in_8bit": True} if backend.endswith("int8") else {})
        return SentenceTransformer(str(path), device="cpu", backend="openvino", model_kwargs=kwargs)
    model = SentenceTransformer(str(path), device="cpu").eval()
    work.mkdir(parents=True, exist_ok=True)
    if backend == "torch-int8":
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    if backend.startswith("onnx"):
        session = _onnx_session(model, work, backend == "onnx-int8", threads)
        return _run_transformer_with(model, lambda ids, mask: session.run(
            None, {"input_ids": ids, "attention_mask": mask})[0])
    if backend.startswith("openvino"):
        compiled = _openvino_model(model, work, backend, threads, calibration)
        return _run_transformer_with(model, lambda ids, mask: compiled(
            {"input_ids": ids, "attention_mask": mask})[0])
    return model


# ------------------------------------------------------------------------------------------------ one run


def pair_set(pairs: Any) -> set[tuple[str, str, str]]:
    return set(zip(pairs["doc_id"], pairs["anchor"], pairs["positive"], strict=True))


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def mine_once(backend: str, domain: str, documents: list[dict[str, Any]], path: Path, threads: int,
              work: Path) -> dict[str, Any]:
    from st_infocse.mining import mine_pairs

    t0 = time.perf_counter()
    sentences = sorted({s for d in documents for s in d["sentences"]})
    calibration = random.Random(SEED).sample(sentences, min(CALIBRATION_SENTENCES, len(sentences)))
    model = load_annotator(backend, path, threads, work, (f"{domain}-{len(documents)}", calibration))
    load_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    for start in range(0, len(sentences), 64):  # what encode spends tokenising (the same 64-sentence batches)
        model.preprocess(sentences[start:start + 64])
    tokenize_seconds = time.perf_counter() - t1
    load_before = os.getloadavg()[0]
    precision = "bf16" if backend == "torch-bf16" else "fp32"  # the package's own option; the model stays fp32
    pairs, report = mine_pairs(documents, model, show_progress_bar=False, precision=precision)
    if report.precision != precision:
        raise RuntimeError(f"{backend}: mining fell back to {report.precision} (no native bf16 here)")
    found = sorted(pair_set(pairs))
    (work / "pairs").mkdir(parents=True, exist_ok=True)
    (work / "pairs" / f"{domain}-{len(documents)}-{backend}-{threads}.json").write_text(json.dumps(found))
    return {
        "backend": backend, "domain": domain, "threads": threads, "documents": len(documents),
        "sentences": report.sentences_encoded, "pairs": report.pairs,
        "load_seconds": round(load_seconds, 2), "mining_seconds": round(report.total_seconds, 2),
        "encode_seconds": round(report.encode_seconds, 2), "tokenize_seconds_alone": round(tokenize_seconds, 2),
        "graph_seconds": round(report.graph_seconds, 3), "prepare_seconds": round(report.prepare_seconds, 3),
        "output_seconds": round(report.output_seconds, 3),
        "load_1min_before": round(load_before, 2), "load_1min_after": round(os.getloadavg()[0], 2),
    }


def read_pairs(work: Path, domain: str, documents: int, backend: str, threads: int | None = None) -> set | None:
    """The pairs a run wrote under ``work`` (any thread count when ``threads`` is None), or None."""
    found = sorted((work / "pairs").glob(f"{domain}-{documents}-{backend}-{threads or '*'}.json"))
    return {tuple(p) for p in json.loads(found[0].read_text())} if found else None


def agreement(pairs: set, reference: set) -> dict[str, float]:
    """Jaccard of the pair sets, the share of the reference's pairs found, and the share of documents whose pair set
    is the reference's exactly (one moved edge can merge two clusters, so pair counts amplify small changes)."""
    def by_doc(found: set) -> dict[str, set]:
        docs: dict[str, set] = {}
        for doc, anchor, positive in found:
            docs.setdefault(doc, set()).add((anchor, positive))
        return docs

    mine, theirs = by_doc(pairs), by_doc(reference)
    docs = set(mine) | set(theirs)
    same = sum(mine.get(d, set()) == theirs.get(d, set()) for d in docs)
    return {"jaccard_vs_fp32": round(jaccard(pairs, reference), 4),
            "fp32_pairs_found": round(len(pairs & reference) / len(reference), 4) if reference else 1.0,
            "documents_same_pairs": round(same / len(docs), 4) if docs else 1.0}


def cpu() -> str:
    """The processor's name and the vector units the int8 / bf16 kernels use (Linux), e.g. for the speed-ups."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    units = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8") if f in flags]
    return f"{name} ({', '.join(units) or 'no AVX2'})"


def load_results(out: Path = OUT) -> dict[str, Any]:
    return json.loads(out.read_text()) if out.exists() else {"rows": {}}


def run(args: argparse.Namespace) -> None:
    path = mpnet_path(args.mpnet)
    work = Path(args.work)
    out = Path(args.out)
    results = load_results(out)
    for domain in args.domains:
        documents = load_documents(domain, args.docs, Path(args.data))
        for backend in args.backends:
            key = f"{domain}/{len(documents)}/{backend}/{args.threads}"
            try:
                row = mine_once(backend, domain, documents, path, args.threads, work)
            except (ImportError, ModuleNotFoundError, Exception) as exc:  # noqa: BLE001 - a backend that cannot load is a row
                if backend in ("fp32", "torch-bf16", "torch-int8"):
                    raise
                row = {"backend": backend, "domain": domain, "threads": args.threads, "documents": len(documents),
                       "skipped": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"}
            reference = read_pairs(work, domain, len(documents), REFERENCE, 1)
            mine = read_pairs(work, domain, len(documents), backend, args.threads)
            if reference is not None and mine is not None and "skipped" not in row:
                row |= agreement(mine, reference)
            row["machine"] = machine()
            row["command"] = "python -m benchmarks.annotator_backends " + " ".join(sys.argv[1:])
            results["rows"][key] = row
            results["command"] = "python -m benchmarks.annotator_backends " + " ".join(sys.argv[1:])
            results["commit"] = commit()
            results["cpu"] = cpu()
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
            print(json.dumps(row), flush=True)


# ------------------------------------------------------------------------------------------------ report


def markdown(results: dict[str, Any]) -> str:
    rows = list(results["rows"].values())
    base = {(r["domain"], r["documents"], r["threads"]): r["mining_seconds"] for r in rows
            if r["backend"] == REFERENCE and "skipped" not in r}
    lines = [
        "| domain | docs (sentences) | backend | threads | mining s | speed-up vs fp32 | Jaccard vs fp32 | fp32 pairs "
        "found | docs with fp32's pairs | pairs | encode s (tokenise) | rest of mining s | load s | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {b: i for i, b in enumerate(BACKENDS)}
    for r in sorted(rows, key=lambda r: (r["domain"], r["documents"], r["threads"], order.get(r["backend"], 99))):
        if "skipped" in r:
            lines.append(f"| {r['domain']} | {r['documents']} | {r['backend']} | {r['threads']} | skipped: "
                         f"{r['skipped']} | | | | | | | | | |")
            continue
        ref = base.get((r["domain"], r["documents"], r["threads"]))
        speed = f"{ref / r['mining_seconds']:.2f}x" if ref else "-"
        rest = r["graph_seconds"] + r["prepare_seconds"] + r["output_seconds"]
        jac, found, same = (r.get(k, "-") for k in ("jaccard_vs_fp32", "fp32_pairs_found", "documents_same_pairs"))
        lines.append(
            f"| {r['domain']} | {r['documents']} ({r['sentences']}) | {r['backend']} | {r['threads']} | "
            f"{r['mining_seconds']:.1f} | {speed} | {jac} | {found} | {same} | {r['pairs']} | {r['encode_seconds']:.1f} "
            f"({r['tokenize_seconds_alone']:.1f}) | {rest:.2f} | {r['load_seconds']:.1f} | "
            f"{r['load_1min_before']}-{r['load_1min_after']} |")
    cores = {r["machine"]["cores"] for r in rows if "machine" in r}
    runs = sorted({(r.get("command", results["command"]), r["machine"]["commit"]) for r in rows if "machine" in r})
    produced = "; ".join(provenance({"command": command, "commit": at}) for command, at in runs)
    return "\n".join([
        f"Produced by {produced}; then `python -m benchmarks.annotator_backends report`.",
        "",
        f"all-mpnet-base-v2 mining IDC pairs (`mine_pairs` defaults: top-1, cosine, batch 64) from a seed-{SEED} "
        f"sample of each domain's documents, on a {'/'.join(map(str, sorted(cores)))}-core {results.get('cpu', 'CPU')} "
        "shared with other "
        "jobs (the 1-minute load average before and after each run is given: timings are approximate). Mining s is "
        "`MiningReport.total_seconds` (model load excluded, given apart); encode s includes tokenising, whose time "
        "alone over the same batches is in brackets; the rest of mining is the graph work, reading documents and "
        "writing pairs.",
        "",
        *lines,
    ])


def report(args: argparse.Namespace) -> None:
    results = load_results()
    for row in results["rows"].values():  # agreement of rows measured before the reference existed
        if "skipped" in row or "documents_same_pairs" in row:
            continue
        reference = read_pairs(Path(args.work), row["domain"], row["documents"], REFERENCE, 1)
        mine = read_pairs(Path(args.work), row["domain"], row["documents"], row["backend"], row["threads"])
        if reference is not None and mine is not None:
            row |= agreement(mine, reference)
    OUT.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    text = markdown(results)
    OUT.with_suffix(".md").write_text("# IDC annotator backends\n\n" + text + "\n")
    update_block(text, "annotator-backends")
    print(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="mine with each backend and add the rows to the results")
    r.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    r.add_argument("--domains", nargs="+", choices=DOMAINS, default=list(DOMAINS))
    r.add_argument("--docs", type=int, default=500, help="documents per domain (a seed-0 sample)")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--mpnet", default=None, help="all-mpnet-base-v2 folder (default: $ST_INFOCSE_MPNET)")
    r.add_argument("--data", default=str(SHARED), help="the shared data folder (beir/scifact, docs/reuters21578)")
    r.add_argument("--work", default="/tmp/annotator_backends", help="exported models and mined pairs")
    r.add_argument("--out", default=str(OUT), help="the results file the rows are added to")
    r.set_defaults(func=run)
    rep = sub.add_parser("report", help="write the markdown table and the README block")
    rep.add_argument("--work", default="/tmp/annotator_backends", help="the runs' mined pairs")
    rep.set_defaults(func=report)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
