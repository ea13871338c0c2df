"""The fuzz suite (issue 13): every command and option with hostile values, corrupt and malicious
files, each case in a forked child with an address-space cap and a timeout (harness.py). The quick
subset runs with the default tests; the full set is marked slow (`pytest -m slow tests/fuzz -s`
prints the counts)."""
