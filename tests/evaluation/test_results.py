"""Every evaluation result offers the one interface the report loops over."""

import pytest

from st_infocse.evaluation import (
    BEIRResult,
    EvaluationResult,
    GeometryResult,
    InDomainRetrievalResult,
    STSResult,
    TransferResult,
    markdown_report,
)


@pytest.mark.parametrize("result_class", [STSResult, BEIRResult, TransferResult, InDomainRetrievalResult, GeometryResult])
def test_every_result_offers_the_interface(result_class):
    assert issubclass(result_class, EvaluationResult)


def test_the_report_uses_each_results_own_markdown():
    geometry = GeometryResult(alignment=0.25, uniformity=-2.5, n_positive_pairs=3, n_sentences=6, source="unit")
    recall = InDomainRetrievalResult(recall={1: 50.0, 5: 75.0}, n_queries=4, n_corpus=8, source="unit")
    report = markdown_report({"Geometry": geometry, "In-domain": recall})
    assert geometry.to_markdown() in report and "| alignment | 0.2500 |" in report
    assert recall.to_markdown() in report and "| recall (4 queries) | 50.00 | 75.00 |" in report
