// The program of fingerprint_layer_check_<layer> (CMakeLists.txt beside this
// file): it does nothing; that it links proves the layer calls nothing above it.
int
main()
{
  return 0;
}
