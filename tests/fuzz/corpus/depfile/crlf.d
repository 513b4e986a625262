out.exe: \
  a.obj \
  C:/Program\ Files/lib/x.lib

a.obj:
