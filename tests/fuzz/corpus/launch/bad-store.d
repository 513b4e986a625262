app: \
 liba.a
