/* contract.c: prints what the collector library's headers say of the trace file format, for
 * TestContract (contract_test.go), which compares it with the Go reader. One line each:
 *
 *   struct NAME SIZE
 *   field STRUCT.FIELD OFFSET SIZE
 *   const NAME VALUE        (decimal)
 *   string NAME VALUE
 *
 * Every struct, field, enum member and #define of trace.h is printed; the test checks that by
 * reading trace.h, so a member added there and not here makes it fail. */
#include <stddef.h>
#include <stdio.h>

#include "../../../preload/c/trace.h"
#include "../../../preload/c/unwind.h"

#define STRUCT(s) printf("struct %s %zu\n", #s, sizeof(struct s))
#define FIELD(s, f) printf("field %s.%s %zu %zu\n", #s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f))
#define CONST(c) printf("const %s %llu\n", #c, (unsigned long long)(c))
#define STRING(c) printf("string %s %s\n", #c, c)

int main(void)
{
	STRING(ER_MAGIC);
	CONST(ER_VERSION);
	CONST(ER_HEADER_SIZE);
	CONST(ER_BLOCK_SIZE);
	CONST(ER_MAX_FRAMES);
	CONST(ER_STOP_SECCOMP);

	CONST(ER_FILE_HEAP);
	CONST(ER_FILE_SYNC);
	CONST(ER_FILE_IO);
	CONST(ER_FILE_CLOCK);
	CONST(ER_FILE_STACKS);

	STRUCT(er_file_header);
	FIELD(er_file_header, magic);
	FIELD(er_file_header, version);
	FIELD(er_file_header, kind);
	FIELD(er_file_header, block_size);
	FIELD(er_file_header, pid);
	FIELD(er_file_header, param);
	FIELD(er_file_header, start_ns);
	FIELD(er_file_header, stop_errno);
	FIELD(er_file_header, pad);
	FIELD(er_file_header, stop_ns);
	FIELD(er_file_header, lost);

	CONST(ER_REC_STACK);
	CONST(ER_REC_HEAP);
	CONST(ER_REC_SYNC);
	CONST(ER_REC_IO);
	CONST(ER_REC_CLOCK);
	CONST(ER_REC_MAP);
	CONST(ER_REC_NOTE);

	CONST(ER_HEAP_MALLOC);
	CONST(ER_HEAP_CALLOC);
	CONST(ER_HEAP_REALLOC);
	CONST(ER_HEAP_FREE);
	CONST(ER_HEAP_POSIX_MEMALIGN);
	CONST(ER_HEAP_ALIGNED_ALLOC);
	CONST(ER_HEAP_MEMALIGN);
	CONST(ER_HEAP_VALLOC);
	CONST(ER_HEAP_PVALLOC);
	CONST(ER_HEAP_REALLOCARRAY);
	CONST(ER_HEAP_MMAP);
	CONST(ER_HEAP_MUNMAP);

	CONST(ER_SYNC_MUTEX_LOCK);
	CONST(ER_SYNC_COND_WAIT);
	CONST(ER_SYNC_RWLOCK_RDLOCK);
	CONST(ER_SYNC_RWLOCK_WRLOCK);
	CONST(ER_SYNC_JOIN);
	CONST(ER_SYNC_SEM_WAIT);
	CONST(ER_SYNC_BARRIER_WAIT);

	CONST(ER_IO_OPEN);
	CONST(ER_IO_OPENAT);
	CONST(ER_IO_CREAT);
	CONST(ER_IO_CLOSE);
	CONST(ER_IO_READ);
	CONST(ER_IO_WRITE);
	CONST(ER_IO_PREAD);
	CONST(ER_IO_PWRITE);
	CONST(ER_IO_READV);
	CONST(ER_IO_WRITEV);
	CONST(ER_IO_PREADV);
	CONST(ER_IO_PWRITEV);
	CONST(ER_IO_LSEEK);
	CONST(ER_IO_FSYNC);
	CONST(ER_IO_FDATASYNC);
	CONST(ER_IO_DUP);
	CONST(ER_IO_DUP2);
	CONST(ER_IO_DUP3);
	CONST(ER_IO_PIPE);
	CONST(ER_IO_PIPE2);
	CONST(ER_IO_FOPEN);
	CONST(ER_IO_FDOPEN);
	CONST(ER_IO_FREOPEN);
	CONST(ER_IO_FCLOSE);
	CONST(ER_IO_FREAD);
	CONST(ER_IO_FWRITE);
	CONST(ER_IO_FGETS);
	CONST(ER_IO_FPUTS);
	CONST(ER_IO_FGETC);
	CONST(ER_IO_FPUTC);
	CONST(ER_IO_FPRINTF);
	CONST(ER_IO_VFPRINTF);
	CONST(ER_IO_PRINTF);
	CONST(ER_IO_VPRINTF);
	CONST(ER_IO_PUTS);
	CONST(ER_IO_FFLUSH);
	CONST(ER_IO_FSEEK);
	CONST(ER_IO_GETC);
	CONST(ER_IO_PUTC);
	CONST(ER_IO_INHERITED);

	CONST(ER_MAP_MAPPED);
	CONST(ER_MAP_UNMAPPED);
	CONST(ER_MAP_INITIAL);

	STRUCT(er_rec);
	FIELD(er_rec, size8);
	FIELD(er_rec, kind);
	FIELD(er_rec, aux);
	FIELD(er_rec, tid);
	FIELD(er_rec, time);

	STRUCT(er_rec_stack);
	FIELD(er_rec_stack, h);
	FIELD(er_rec_stack, id);
	FIELD(er_rec_stack, n);

	STRUCT(er_rec_heap);
	FIELD(er_rec_heap, h);
	FIELD(er_rec_heap, stack);
	FIELD(er_rec_heap, pad);
	FIELD(er_rec_heap, addr);
	FIELD(er_rec_heap, size);
	FIELD(er_rec_heap, old);

	STRUCT(er_rec_alloc);
	FIELD(er_rec_alloc, h);
	FIELD(er_rec_alloc, stack);
	FIELD(er_rec_alloc, size);
	FIELD(er_rec_alloc, addr);

	STRUCT(er_rec_free);
	FIELD(er_rec_free, h);
	FIELD(er_rec_free, old);

	STRUCT(er_rec_sync);
	FIELD(er_rec_sync, h);
	FIELD(er_rec_sync, stack);
	FIELD(er_rec_sync, pad);
	FIELD(er_rec_sync, wait_ns);
	FIELD(er_rec_sync, object);

	STRUCT(er_rec_io);
	FIELD(er_rec_io, h);
	FIELD(er_rec_io, stack);
	FIELD(er_rec_io, name_len);
	FIELD(er_rec_io, dur_ns);
	FIELD(er_rec_io, fd);
	FIELD(er_rec_io, fd2);
	FIELD(er_rec_io, ret);
	FIELD(er_rec_io, bytes);
	FIELD(er_rec_io, err);
	FIELD(er_rec_io, pad);

	STRUCT(er_rec_clock);
	FIELD(er_rec_clock, h);
	FIELD(er_rec_clock, stack);
	FIELD(er_rec_clock, count);
	FIELD(er_rec_clock, cpu);
	FIELD(er_rec_clock, pad);

	STRUCT(er_rec_map);
	FIELD(er_rec_map, h);
	FIELD(er_rec_map, start);
	FIELD(er_rec_map, end);
	FIELD(er_rec_map, offset);
	FIELD(er_rec_map, path_len);
	FIELD(er_rec_map, pad);

	CONST(ER_PC_TRUNCATED);
	CONST(ER_PC_FAILED);
	return 0;
}
