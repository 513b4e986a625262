int sub_value();
int
main()
{
  return sub_value() == 7 ? 0 : 1;
}
