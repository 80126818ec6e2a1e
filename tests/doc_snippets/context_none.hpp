// SPDX-License-Identifier: MIT
#pragma once
// Context "none" of the documentation's C++ fragments (tests/doc_snippets/extract.py): the
// library and the standard headers a fragment prints with, no variables.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "topopreempt/topopreempt.hpp"

namespace doc_snippets::none {

/// Nothing to lend: the fragment declares everything it uses.
struct SnippetContext {};

}  // namespace doc_snippets::none
