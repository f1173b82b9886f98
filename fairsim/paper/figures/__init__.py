"""One module per figure and table of the paper: ``draw(inputs, out_dir)`` (and, for those that add
a REPORT.md section, ``report_section``), each named in experiments/paper.yaml."""
