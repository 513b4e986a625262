bin/tool: \
  CMakeFiles/tool.dir/tool.cpp.o \
  /opt/My\ SDK/lib/libsdk.a \
  /opt/cost$$/lib/libcost.a \
  lib/lib\#hash.a \
  /lib/x86_64-linux-gnu/libm.so.6

/opt/My\ SDK/lib/libsdk.a:

/opt/cost$$/lib/libcost.a:
