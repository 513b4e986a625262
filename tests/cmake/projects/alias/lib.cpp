int
small_value()
{
  return 42;
}
