app: \
  /usr/lib/x86_64-linux-gnu/Scrt1.o \
  /usr/lib/x86_64-linux-gnu/crti.o \
  /usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o \
  CMakeFiles/app.dir/main.cpp.o \
  /opt/My SDK/lib/libsdk.a \
  libcore.so.1.2.3 \
  /usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.so \
  /lib/x86_64-linux-gnu/libc.so.6 \
  /usr/lib/x86_64-linux-gnu/crtn.o

/usr/lib/x86_64-linux-gnu/Scrt1.o:

/opt/My SDK/lib/libsdk.a:

libcore.so.1.2.3:
