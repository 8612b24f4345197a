using System.Diagnostics;

namespace BoundedWork.Tests.Internal.Items;

public sealed class ExecutionContextTests
{
    private static readonly AsyncLocal<string?> s_local = new();

    [Fact]
    public async Task ByDefault_AsyncLocalsFlowFromSubmitterToItem()
    {
        await using var executor = TestKit.Create();
        s_local.Value = "from-submitter";
        var seen = new TaskCompletionSource<string?>(TaskCreationOptions.RunContinuationsAsynchronously);

        executor.Execute(() => seen.SetResult(s_local.Value));

        Assert.Equal("from-submitter", await seen.Task.WaitAsync(TestKit.Safety));
        Assert.Equal("from-submitter", await executor.RunAsync(() => s_local.Value));
    }

    [Fact]
    public async Task ByDefault_TheCurrentActivityFlowsToTheItem()
    {
        await using var executor = TestKit.Create();
        using var activity = new Activity("submit").Start();

        var traceId = await executor.RunAsync(() => Activity.Current?.TraceId);

        Assert.Equal(activity.TraceId, traceId);
    }

    [Fact]
    public async Task FlowDisabled_ItemSeesACleanContext()
    {
        await using var executor = TestKit.Create(configure: o => o.FlowExecutionContext = false);
        s_local.Value = "from-submitter";

        Assert.Null(await executor.RunAsync(() => s_local.Value));
        var seen = new TaskCompletionSource<string?>(TaskCreationOptions.RunContinuationsAsynchronously);
        executor.Execute(() => seen.SetResult(s_local.Value));
        Assert.Null(await seen.Task.WaitAsync(TestKit.Safety));
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task AnItemsAsyncLocalChanges_DoNotLeakIntoTheNextItem(bool flow)
    {
        await using var executor = TestKit.Create(workers: 1, configure: o => o.FlowExecutionContext = flow);
        s_local.Value = null;

        executor.Execute(() => s_local.Value = "leaked");
        await executor.RunAsync(() => s_local.Value = "leaked too");

        Assert.Null(await executor.RunAsync(() => s_local.Value));
    }
}
