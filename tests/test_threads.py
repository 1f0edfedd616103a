"""A job function called from several threads gives the results of some serial order of the same calls."""
import sys
import threading

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp


def _run_threads(targets):
    # switch threads often, so that unserialised calls would interleave inside one job call
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        errors = []

        def guarded(target):
            def run():
                try:
                    target()
                except BaseException as e:  # a thread's failure fails the test, not only a warning
                    errors.append(e)
            return run

        threads = [threading.Thread(target=guarded(t)) for t in targets]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    finally:
        sys.setswitchinterval(old)


def test_two_threads_calling_one_predict_job_get_their_own_results():
    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((8, 16))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(16, 4), initializer=flow.random_uniform_initializer())
        return flow.math.tanh(flow.matmul(x, w)) * 2.0 + 1.0

    rng = np.random.RandomState(0)
    inputs = [[rng.randn(8, 16).astype(np.float32) for _ in range(300)] for _ in range(2)]
    expected = [[predict(x) for x in xs] for xs in inputs]  # sequential reference
    got = [[None] * 300, [None] * 300]

    def worker(t):
        def run():
            for i, x in enumerate(inputs[t]):
                got[t][i] = predict(x)
        return run

    _run_threads([worker(0), worker(1)])
    wrong = sum(not np.array_equal(g, e) for t in range(2) for g, e in zip(got[t], expected[t]))
    assert wrong == 0, "%d of 600 threaded predictions differ from the sequential ones" % wrong


def test_two_threads_training_equal_some_serial_order():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(4,), initializer=flow.zeros_initializer())
        loss = flow.math.reduce_sum(w * x)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return loss

    # each step does w -= x and returns sum(w_before * x): thread 0 feeds ones, thread 1 twos, so each call's
    # result tells the w it saw, and a serial order must explain every one of them
    calls = {0: [], 1: []}

    def worker(t):
        x = np.full(4, t + 1, np.float32)

        def run():
            for _ in range(150):
                calls[t].append(float(np.asarray(train(x)).reshape(-1)[0]))
        return run

    _run_threads([worker(0), worker(1)])
    seen = sorted([(-loss / (4 * (t + 1)), t + 1) for t in (0, 1) for loss in calls[t]])
    w = 0.0  # replay in the order of the w each call saw (w only decreases)
    for w_before_neg, step in seen:
        assert -w_before_neg == w, "a call saw w=%s where a serial order gives %s" % (-w_before_neg, w)
        w -= step
    final = flow.get_all_variables()["w"].numpy()
    np.testing.assert_array_equal(final, np.full(4, -(150 * 1 + 150 * 2), np.float32))
