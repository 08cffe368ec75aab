/*
 * scripts/test-engine's probe: what BotPsy's worker does with a built engine, in C, so that it
 * runs under musl (natively on x86_64, through qemu-user on aarch64) without a musl Python.
 *
 *   run_model LIBDIR MODEL.gguf [N_TOKENS]
 *
 * Loads the CPU backend from LIBDIR as the worker does (ggml scores every
 * libggml-cpu-<variant>.so against this CPU and loads the best), prints which variant was
 * chosen and its features, loads MODEL, evaluates a prompt and generates N_TOKENS greedily.
 * Prints "variant: NAME" and "generated: N tokens" and exits 0 on success.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char * text, void * data) {
    (void) data;
    if (level >= GGML_LOG_LEVEL_WARN) {
        fputs(text, stderr);
    }
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBDIR MODEL.gguf [N_TOKENS]\n", argv[0]);
        return 2;
    }
    const int n_predict = argc > 3 ? atoi(argv[3]) : 8;
    llama_log_set(quiet, NULL);

    ggml_backend_load_all_from_path(argv[1]);
    ggml_backend_reg_t cpu = ggml_backend_reg_by_name("CPU");
    if (cpu == NULL) {
        fprintf(stderr, "no CPU backend in %s can run on this CPU\n", argv[1]);
        return 1;
    }
    void * features_fn = ggml_backend_reg_get_proc_address(cpu, "ggml_backend_get_features");
    Dl_info info;
    const char * variant = "?";
    if (features_fn && dladdr(features_fn, &info) && info.dli_fname) {
        variant = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1 : info.dli_fname;
    }
    printf("variant: %s\n", variant);
    printf("features:");
    if (features_fn) {
        for (struct ggml_backend_feature * f = ((ggml_backend_get_features_t) features_fn)(cpu); f->name; f++) {
            printf(" %s", f->name);
        }
    }
    printf("\n");

    struct llama_model_params mparams = llama_model_default_params();
    struct llama_model * model = llama_model_load_from_file(argv[2], mparams);
    if (model == NULL) {
        fprintf(stderr, "cannot load %s\n", argv[2]);
        return 1;
    }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);
    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = 256;
    cparams.n_batch = 64;
    cparams.n_threads = 2;
    cparams.n_threads_batch = 2;
    struct llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == NULL) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }

    const char * prompt = "Turn on the kitchen light";
    llama_token tokens[128];
    int n = llama_tokenize(vocab, prompt, (int) strlen(prompt), tokens, 128, true, true);
    if (n <= 0) {
        fprintf(stderr, "tokenize failed\n");
        return 1;
    }
    struct llama_sampler * sampler = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(sampler, llama_sampler_init_greedy());

    struct llama_batch batch = llama_batch_get_one(tokens, n);
    int generated = 0;
    llama_token token;
    printf("output: ");
    for (; generated < n_predict; generated++) {
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "\ndecode failed\n");
            return 1;
        }
        /* Random tiny models end early: every token counts, an end of generation too. */
        token = llama_sampler_sample(sampler, ctx, -1);
        char piece[64];
        int len = llama_token_to_piece(vocab, token, piece, sizeof piece, 0, true);
        if (len > 0) {
            fwrite(piece, 1, (size_t) len, stdout);
        }
        batch = llama_batch_get_one(&token, 1);
    }
    printf("\nprompt: %d tokens\ngenerated: %d tokens\n", n, generated);
    llama_sampler_free(sampler);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
