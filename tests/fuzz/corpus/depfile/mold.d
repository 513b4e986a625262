libplugin.so: CMakeFiles/plugin.dir/plugin.cpp.o libcore.a /usr/lib/x86_64-linux-gnu/libssl.so.3 /usr/lib/x86_64-linux-gnu/libcrypto.so.3
