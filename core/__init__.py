"""UNS core: the vocabulary every layer shares (errors and problems, ids, schemas, codes, kinds)."""
