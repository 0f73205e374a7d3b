"""Reference implementations the tests check the library's fast paths against.

Each computes one arm, one sample or one file the plain way (a loop, a per-arm frame,
statsmodels, pandas) that the library replaced with a batched or streamed path; a test
asserts the two agree. Nothing in the library imports them.
"""
