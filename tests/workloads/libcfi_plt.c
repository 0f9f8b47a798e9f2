/*
 * libcfi_plt.so: linked into chain_nofp, whose `plt` mode calls cfi_inc() through the PLT in a
 * tight loop. Built -O2 -fomit-frame-pointer -fPIC: a leaf of two instructions.
 */
__attribute__((noipa)) long cfi_inc(long x) {
    return x + 1;
}
