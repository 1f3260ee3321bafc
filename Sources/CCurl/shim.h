#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>

// Typed wrappers for libcurl's variadic calls, which Swift cannot call directly
// (the same approach as swift-corelibs-foundation's CFURLSession_easy_setopt_*).

static inline CURLcode CCurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_int64(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_mime(CURL *handle, curl_mime *value) {
    return curl_easy_setopt(handle, CURLOPT_MIMEPOST, value);
}
static inline CURLcode CCurl_easy_setopt_read_function(CURL *handle, curl_read_callback fn) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, fn);
}
static inline CURLcode CCurl_easy_setopt_write_function(CURL *handle, curl_write_callback fn) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, fn);
}
static inline CURLcode CCurl_easy_setopt_header_function(CURL *handle, curl_write_callback fn) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, fn);
}
static inline CURLcode CCurl_easy_setopt_seek_function(CURL *handle, curl_seek_callback fn) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, fn);
}
static inline CURLcode CCurl_easy_setopt_sockopt_function(CURL *handle, curl_sockopt_callback fn) {
    return curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, fn);
}
static inline CURLcode CCurl_easy_setopt_xferinfo_function(CURL *handle, curl_xferinfo_callback fn) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, fn);
}

static inline CURLcode CCurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode CCurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode CCurl_easy_getinfo_int64(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode CCurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLMcode CCurl_multi_setopt_pointer(CURLM *handle, CURLMoption option, void *value) {
    return curl_multi_setopt(handle, option, value);
}
static inline CURLMcode CCurl_multi_setopt_socket_function(CURLM *handle, curl_socket_callback fn) {
    return curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, fn);
}
static inline CURLMcode CCurl_multi_setopt_timer_function(CURLM *handle, curl_multi_timer_callback fn) {
    return curl_multi_setopt(handle, CURLMOPT_TIMERFUNCTION, fn);
}

// What the socket callback is asked to watch, and what curl_multi_socket_action is told.
static const int CCurl_POLL_IN = CURL_POLL_IN;
static const int CCurl_POLL_OUT = CURL_POLL_OUT;
static const int CCurl_POLL_REMOVE = CURL_POLL_REMOVE;
static const int CCurl_CSELECT_IN = CURL_CSELECT_IN;
static const int CCurl_CSELECT_OUT = CURL_CSELECT_OUT;
static const int CCurl_CSELECT_ERR = CURL_CSELECT_ERR;
static const curl_socket_t CCurl_SOCKET_TIMEOUT = CURL_SOCKET_TIMEOUT;

// Return values of the read callback, as plain constants Swift can see.
static const size_t CCurl_READFUNC_ABORT = CURL_READFUNC_ABORT;
static const size_t CCurl_READFUNC_PAUSE = CURL_READFUNC_PAUSE;
static const int CCurl_PAUSE_CONT = CURLPAUSE_CONT;

static const long CCurl_AUTH_BASIC = (long)CURLAUTH_BASIC;
static const long CCurl_HTTP_VERSION_1_1 = (long)CURL_HTTP_VERSION_1_1;
static const long CCurl_HTTP_VERSION_2TLS = (long)CURL_HTTP_VERSION_2TLS;
static const long CCurl_GLOBAL_ALL = CURL_GLOBAL_ALL;
static const int CCurl_SEEKFUNC_OK = CURL_SEEKFUNC_OK;
static const int CCurl_SEEKFUNC_FAIL = CURL_SEEKFUNC_FAIL;

/// The result code of a finished transfer from a CURLMsg (a union field Swift reads awkwardly).
static inline CURLcode CCurl_message_result(const CURLMsg *message) { return message->data.result; }

#endif
