// Fills every word of a block's dynamic shared memory with a NaN. Launched over every SM with the
// largest allocation a block may have, right before the hidden-input run, so that a kernel which
// leaves part of its tile unwritten reads NaN instead of whatever an earlier kernel left there.
extern "C" __global__ void poisonSharedMemory(unsigned int words) {
    extern __shared__ unsigned int shared_words[];
    // volatile: the block never reads these words back, and the stores must not be dropped.
    volatile unsigned int* words_out = shared_words;
    for (unsigned int w = threadIdx.x; w < words; w += blockDim.x) {
        words_out[w] = 0x7fc00badu;  // a quiet NaN with a recognisable payload
    }
}
