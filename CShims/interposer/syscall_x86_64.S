/* syscall(): most numbers go to wj_syscall_hook (syscall.c) with the caller's arguments as
 * they are (a jump, no frame). fork, vfork, clone and clone3 cannot go through a C frame of
 * ours: a child that shares the caller's stack would return through it. Those jump straight
 * to the real syscall, after wj_syscall_forklike marked the thread (context.h: the child
 * then passes through every hook). */
#if defined(__x86_64__)
    .text
    .globl syscall
    .type syscall, @function
syscall:
    .cfi_startproc
    cmpq $57, %rdi          /* SYS_fork */
    je 1f
    cmpq $58, %rdi          /* SYS_vfork */
    je 1f
    cmpq $56, %rdi          /* SYS_clone */
    je 1f
    cmpq $435, %rdi         /* SYS_clone3 */
    je 1f
    jmp wj_syscall_hook
1:
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    pushq %rdx
    .cfi_adjust_cfa_offset 8
    pushq %rcx
    .cfi_adjust_cfa_offset 8
    pushq %r8
    .cfi_adjust_cfa_offset 8
    pushq %r9
    .cfi_adjust_cfa_offset 8
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call wj_syscall_forklike
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %r9
    .cfi_adjust_cfa_offset -8
    popq %r8
    .cfi_adjust_cfa_offset -8
    popq %rcx
    .cfi_adjust_cfa_offset -8
    popq %rdx
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size syscall, .-syscall
    .section .note.GNU-stack,"",@progbits
#endif
