app: /dev/null \
 /nonexistent.a \
 .
