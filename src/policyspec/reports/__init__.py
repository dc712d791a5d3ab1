"""Every report format, in one home: the report itself, JSON and JUnit and
text (``report``), HTML pages (``html``), the markdown summary
(``markdown``), the matrix of several runs (``matrix``), merged shards
(``merge``), the verdict rule (``verdict``), and the pieces they share
(``timeline``, ``trace_record``, ``run_details``, ``known_failing``);
``write`` writes them for every command."""
