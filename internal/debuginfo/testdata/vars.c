/* vars.c: variables at fixed addresses for Variables: globals, a file-static, a function-static, a
 * struct with a nested struct and an array of structs; a local (not at a fixed address) and an extern
 * declaration (no storage here) are not variables of the object. */
struct inner {
	short x;
	long y;
};
struct outer {
	char tag[12];
	struct inner in;
	struct inner many[3];
	double d;
};
typedef struct outer outer_t;

int counter = 7;
static double table[100];
outer_t records[4];
const char *message = "hi";
extern int elsewhere;

int get(int i) {
	static int calls;
	int local = i;
	calls++;
	return (int)table[i] + counter + records[i].in.x + calls + local + message[0];
}

int main(void) { return get(1); }
