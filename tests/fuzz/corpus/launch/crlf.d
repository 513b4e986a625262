app: \
  liba.a
