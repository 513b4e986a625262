out:	in1.o \
	in2.a	\
		/lib/libz.so.1
