out: a\\ b\\\\ \
  c\\
