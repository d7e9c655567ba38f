/* vfork cannot be wrapped by a C function: the child would return through the wrapper's
 * frame and the parent would then resume on a clobbered stack. This trampoline marks the
 * calling thread (so hooks run in the child pass straight through) and tail-jumps to the
 * real vfork, leaving no frame of its own. */
#if defined(__x86_64__)
    .text
    .globl vfork
    .type vfork, @function
vfork:
    .cfi_startproc
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call wj_vfork_prepare
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size vfork, .-vfork
    .section .note.GNU-stack,"",@progbits
#endif
