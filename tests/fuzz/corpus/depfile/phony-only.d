in1.a:

in2.a:
