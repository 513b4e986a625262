int
lib_value()
{
  return 3;
}
