int lib_value();
int
main()
{
  return lib_value() == 3 ? 0 : 1;
}
