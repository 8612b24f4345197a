namespace BoundedWork.Cli.Tests;

/// <summary>The doctor's reading of counters and stacks, on synthetic samples; names made readable.</summary>
public sealed class DiagnosisTests
{
    [Theory]
    [InlineData("PaymentCallbacks.Server.SlowDependency.Call(class PaymentCallbacks.Server.PaymentCallback)", "SlowDependency.Call")]
    [InlineData("PaymentCallbacks.Server.CallbackServer+<>c.<MapEndpoints>b__6_2(class PaymentCallbacks.Server.PaymentCallback)", "CallbackServer.MapEndpoints (lambda)")]
    [InlineData("Program+<>c.<<Main>$>b__0_7()", "Program.Main (lambda)")]
    [InlineData("Shop.Orders+<>c__DisplayClass3_0.<Handle>b__1()", "Orders.Handle (lambda)")]
    [InlineData("Shop.Orders+<HandleAsync>d__4.MoveNext()", "Orders.HandleAsync (async)")]
    [InlineData("System.Threading.Thread.Sleep(int32)", "Thread.Sleep")]
    [InlineData("Main", "Main")]
    public void Readable_CompilerNames_BecomeTypeAndMethod(string method, string expected) =>
        Assert.Equal(expected, BoundedWork.Cli.Doctor.Diagnosis.Readable(method));
}
