"""HTML pages of reports: one page per run (``write_html_report``) and a
matrix of several runs with what changed between them
(``write_matrix_html``). Self-contained files, readable offline."""

from policyspec.reports.html.matrix_page import render_matrix_page, write_matrix_html
from policyspec.reports.html.run_page import render_run_page, write_html_report

__all__ = ["render_matrix_page", "render_run_page", "write_html_report", "write_matrix_html"]
