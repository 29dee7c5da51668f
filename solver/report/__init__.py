"""How results are shown: text and tables for people, JSON shapes and plots."""
