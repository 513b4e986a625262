int
skipped_value()
{
  return 7;
}
