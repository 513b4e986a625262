#pragma once
int mid_value();
const char* mid_version();
