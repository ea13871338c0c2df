"""Min and max of a list with one attention layer (seed 004 §3.1, §4, Appendix A; spec/minmax.md).

task.py (reference min/max, multiset enumeration), model.py (token-level heads, classifiers, files),
exact.py (exact signs of sums of exponentials), verify.py (exact-histogram and brute-force verifiers),
construction.py (the Appendix A heads and codes), certify.py (the command's certificate).
"""
