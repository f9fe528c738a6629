/* fake_libruby.c - a seed of fuzz_rbfile: what rbfile.c looks for in a
 * libruby (ruby_version, rb_vm_exec, ruby_current_ec by global-dynamic
 * TLS, ruby_current_vm_ptr, and the instructions GCC makes of
 * rb_during_gc, rb_id2str and ruby_thread_has_gvl_p in Debian's 3.1.2),
 * agreeing with
 * rblayout.c's 3.1 row, in a file of a few KiB (the real one is 3.8 MiB).
 * Not built by make; the seed was made with
 *   cc -shared -fPIC -nostdlib -O1 -Wl,--build-id -o \
 *     tests/fuzz/corpus/fuzz_rbfile/fake31.so tests/fuzz/fake_libruby.c
 *   strip tests/fuzz/corpus/fuzz_rbfile/fake31.so */
const char ruby_version[] = "3.1.2";
void *ruby_current_vm_ptr;
__thread void *ruby_current_ec;

void *rb_vm_exec(void *ec)
{
	ruby_current_ec = ec; /* global dynamic: DTPMOD64 + DTPOFF64 */
	return ruby_current_ec;
}

__asm__(".text\n"
	".globl rb_during_gc\n.type rb_during_gc,@function\n"
	"rb_during_gc:\n"
	"	movq ruby_current_vm_ptr@GOTPCREL(%rip), %rax\n"
	"	movq (%rax), %rax\n"
	"	movq 0x450(%rax), %rax\n"
	"	movzbl 0x10(%rax), %eax\n"
	"	shrb $5, %al\n"
	"	andl $1, %eax\n"
	"	ret\n"
	".size rb_during_gc, .-rb_during_gc\n"
	".globl rb_id2str\n.type rb_id2str,@function\n"
	"rb_id2str:\n"
	"	movq %rdi, %rax\n"
	"	shrq $4, %rax\n"
	"	cmpq $0xa9, %rdi\n"
	"	cmova %eax, %edi\n"
	"	xorl %esi, %esi\n"
	"	.byte 0xe9\n"
	"	.long serial_entry - . - 4\n"
	".size rb_id2str, .-rb_id2str\n"
	"serial_entry:\n"
	"	pushq %rbx\n"
	"	cmpl %edi, symbols(%rip)\n"
	"	movq symbols+16(%rip), %rdi\n"
	"	popq %rbx\n"
	"	ret\n"
	".globl ruby_thread_has_gvl_p\n.type ruby_thread_has_gvl_p,@function\n"
	"ruby_thread_has_gvl_p:\n"
	"	subq $8, %rsp\n"
	"	leaq th_tls@tlsld(%rip), %rdi\n"
	"	call __tls_get_addr@PLT\n"
	"	movq th_tls@dtpoff(%rax), %rax\n"
	"	testq %rax, %rax\n"
	"	je 1f\n"
	"	cmpq $0, 0xa8(%rax)\n"
	"	sete %al\n"
	"	addq $8, %rsp\n"
	"	movzbl %al, %eax\n"
	"	ret\n"
	"1:	xorl %eax, %eax\n"
	"	addq $8, %rsp\n"
	"	ret\n"
	".size ruby_thread_has_gvl_p, .-ruby_thread_has_gvl_p\n"
	".section .tbss,\"awT\",@nobits\n.align 8\nth_tls: .zero 8\n"
	".data\n.align 32\nsymbols: .zero 32\n");
