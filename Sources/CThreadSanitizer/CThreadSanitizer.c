// The annotations are inline functions in the header; SwiftPM needs one source file.
#include "CThreadSanitizer.h"
