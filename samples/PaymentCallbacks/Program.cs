using PaymentCallbacks.Demo;
using PaymentCallbacks.Server;

// dotnet run --project samples/PaymentCallbacks -- demo     the short end-to-end run (starts the server as a child)
// dotnet run --project samples/PaymentCallbacks             the server alone, on http://127.0.0.1:5080
var command = args.Length > 0 && !args[0].StartsWith('-') ? args[0] : "serve";
var rest = args.Length > 0 && !args[0].StartsWith('-') ? args[1..] : args;
return command switch
{
    "serve" => await CallbackServer.RunAsync(rest),
    "demo" => await DemoRunner.RunAsync(rest),
    _ => Usage(command),
};

static int Usage(string command)
{
    Console.Error.WriteLine($"Unknown command '{command}'. Commands: serve [--port 5080] [--SideEffect:MaxDelayMs=50 ...], demo [--quick] [--rate 2000].");
    return 2;
}
