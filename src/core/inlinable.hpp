#pragma once

// A library-internal function on the warm call's path, hidden from outside libkiln: calls to it
// from inside the library cannot be interposed, so the compiler may inline them (libkiln is built
// as position-independent code, where it otherwise may not).
#define KILN_INLINABLE [[gnu::visibility("hidden")]]
