// How the ranks of an instance wait for each other without spinning a core: a rank whose peers
// are still computing polls its request for a short while (a round among busy ranks completes
// within microseconds), then sleeps between polls (an idle rank costs next to nothing).
#pragma once

#include <mpi.h>

namespace deepinfer::dist {

// Waits until the non-blocking MPI operation `request` completes: polls for 200 us, then polls
// every 100 us.
void WaitPolitely(MPI_Request* request);

}  // namespace deepinfer::dist
