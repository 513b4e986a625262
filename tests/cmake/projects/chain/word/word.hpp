#pragma once
const char* word();
