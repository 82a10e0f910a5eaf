"""``rlf view``: a local trajectory and reward viewer in the browser.

``runs`` tells what each path given holds; ``run_index`` indexes a trajectory file in a background thread
(``episode_fields`` reads the table's fields of a line, ``column_store`` keeps them); ``audit_run`` reads an
``rlf audit --json`` report; ``text_search`` scans the files for a text; ``episode_page`` and ``verdicts`` make an
episode's page; ``viewer_data`` is what the page reads, ``server`` serves it (behind ``access``), ``export`` writes
it into one HTML file; ``command`` is the CLI. The page itself is ``assets/`` (plain JS, CSS and SVG).
"""
