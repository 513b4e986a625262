int
sub_value()
{
  return 7;
}
