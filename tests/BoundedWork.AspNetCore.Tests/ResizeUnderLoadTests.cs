using System.Net;

namespace BoundedWork.AspNetCore.Tests;

public sealed class ResizeUnderLoadTests
{
    [Fact]
    public async Task PutWorkers_WhileItemsFlow_LosesNothingAndLedgerStaysExact()
    {
        await using var server = await AdminServer.StartAsync(executors: services => services.AddBoundedExecutor("payments", o =>
        {
            o.WorkerCount = 2;
            o.MaxWorkerCount = 8;
            o.QueueCapacity = 64;
            o.RejectionPolicy = RejectionPolicy.Wait;
            o.WaitTimeout = Timeout.InfiniteTimeSpan;
        }));
        var payments = server.Payments;
        const int Producers = 3;
        const int PerProducer = 4_000;
        long ran = 0;
        using var start = new Barrier(Producers + 1);
        var producers = Enumerable.Range(0, Producers).Select(_ => new Thread(() =>
        {
            start.SignalAndWait();
            for (var i = 0; i < PerProducer; i++)
            {
                payments.Execute(() =>
                {
                    Interlocked.Increment(ref ran);
                    Thread.SpinWait(200);
                });
            }
        })).ToList();
        producers.ForEach(t => t.Start());
        start.SignalAndWait();

        // Resize up and down through the API while the producers run; every change must be applied.
        int[] sizes = [8, 1, 5, 2, 7, 1, 4, 3];
        var round = 0;
        while (producers.Any(t => t.IsAlive) || round < sizes.Length)
        {
            var size = sizes[round++ % sizes.Length];
            using var response = await server.Client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", $$"""{"workers": {{size}}}""");
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(size, (await response.JsonAsync()).GetProperty("current").GetProperty("workers").GetInt32());
        }

        producers.ForEach(t => Assert.True(t.Join(TestKit.Safety)));
        using var last = await server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"workers": 3}""");
        await payments.ShutdownAsync(TestKit.Safety);

        var s = payments.GetStatistics();
        Assert.Equal(Producers * PerProducer, s.Submitted);
        Assert.Equal(s.Submitted, s.Completed + s.Failed + s.Cancelled + s.Rejected + s.Discarded + s.Abandoned);
        Assert.Equal(Producers * PerProducer, s.Completed);
        Assert.Equal(s.Completed, Interlocked.Read(ref ran));
        Assert.True(round >= sizes.Length);
        Assert.Equal(round + 1, server.Logs.WithEvent("SettingsChanged").Count);
    }
}
