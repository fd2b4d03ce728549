"""Writers of the corpus traces (tests/corpus/README.md); ``python tests/corpus/gen/make.py`` regenerates them."""
