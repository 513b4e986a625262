int small_value();
int
main()
{
  return small_value() == 42 ? 0 : 1;
}
