// Fills every word of a block's dynamic shared memory with a quiet NaN whose payload differs word
// by word (drawn from the grade's seed). Launched over every SM with the largest allocation a block
// may have, right before the hidden-input run, so that a kernel which leaves part of its tile
// unwritten reads NaN instead of whatever an earlier kernel left there, and so that a kernel
// cannot tell this run from another by finding one value in every unwritten word (a fresh
// context's shared memory reads zeros on an H200).
extern "C" __global__ void poisonSharedMemory(unsigned int words, unsigned int seed) {
    extern __shared__ unsigned int shared_words[];
    // volatile: the block never reads these words back, and the stores must not be dropped.
    volatile unsigned int* words_out = shared_words;
    for (unsigned int w = threadIdx.x; w < words; w += blockDim.x) {
        unsigned int h = (w + 1u) * 0x9e3779b9u ^ seed ^ (blockIdx.x * 0x85ebca6bu);
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        words_out[w] = 0x7fc00000u | (h & 0x003fffffu);  // quiet NaN, payload from h
    }
}
