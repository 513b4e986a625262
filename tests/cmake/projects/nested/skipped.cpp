int
skipped()
{
  return 1;
}
