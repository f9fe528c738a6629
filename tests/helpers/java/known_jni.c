/*
 * known_jni.c - the native half of tests/helpers/java/Known.java: down()
 * calls back into Java (Java -> native wrapper -> C -> call stub ->
 * Java), park() pauses forever in C. Built like Debian's libraries: no
 * frame pointers, unwind tables only.
 */
#include <jni.h>
#include <unistd.h>

static jclass known;
static jmethodID up;

JNIEXPORT jlong JNICALL Java_Known_down(JNIEnv *env, jclass cls, jlong n, jboolean park)
{
	jlong r;

	if (!up) {
		known = (*env)->NewGlobalRef(env, cls);
		up = (*env)->GetStaticMethodID(env, cls, "up", "(JZ)J");
		if (!up)
			return 0;
	}
	r = (*env)->CallStaticLongMethod(env, known, up, n, park);
	/* Work after the call: the call is not a tail call. */
	return r * 7 + 1;
}

JNIEXPORT void JNICALL Java_Known_park(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	for (;;)
		pause();
}
